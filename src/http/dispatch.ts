/**
 * The operations (operation.ts) compiled once into one Express middleware: exact paths are looked up in a
 * Map, path prefixes are checked with startsWith, and a request is matched once. (Express's router would try
 * each registered layer in turn with a path-to-regexp match; on the read path that was ~10% of CPU.)
 *
 * Order of checks: 404 for an unknown path under /v1/, then 405 with Allow for a wrong method, then
 * authentication (except public routes), then the guard, then the operation's privilege, then its query
 * parameters; the handler reads its body through the validator.
 */
import type { NextFunction, Request, Response } from 'express';
import { auditTarget } from '../api/audit-target.js';
import { principalOf } from '../api/context.js';
import type { Authenticate } from '../api/feature.js';
import type { InFlight } from '../api/in-flight.js';
import {
  checksStrayBody,
  type HttpMethod,
  type Operation,
  type OperationInput,
  templatePrefix,
} from '../api/operation.js';
import type { Queries } from '../api/query-params.js';
import { hasBody, rawPath } from '../api/request-parts.js';
import type { QueryReader, Validators } from '../api/validate.js';
import { requirePrivilege } from '../auth/principal.js';
import { AppError, invalid } from '../errors.js';
import type { ClientAddress } from './client-address.js';

/** Runs after authentication and routing, before the handler; throws to refuse the request. */
export type Guard = () => void;

/** Answers an error of a dispatched request (the problem handler), without walking Express's remaining layers. */
export type ErrorAnswer = (err: unknown, req: Request, res: Response) => void;

export type BodyReader = (req: Request, res: Response) => Promise<unknown>;

interface Runnable {
  /** The operation, or the first of those sharing the method (whose action names a refused request). */
  readonly operation: Operation;
  /** Several operations on the method: which one a request is (Operation.classify), by operationId. */
  readonly forms:
    | {
        readonly classify: NonNullable<Operation['classify']>;
        readonly byId: ReadonlyMap<string, Operation>;
      }
    | undefined;
  readonly query: QueryReader<Queries>;
  readonly body: BodyReader | undefined;
  /** For an operation without a body: refuses a body with any field before the handler runs. */
  readonly refuseStray: ((req: Request, res: Response) => Promise<void>) | undefined;
}

/** The operations that share one template. */
interface Path {
  readonly template: string;
  readonly prefix: string | undefined;
  readonly public: boolean;
  /** The dialect its operations speak (operation.ts), which its refusals speak too. */
  readonly dialect: Operation['dialect'];
  readonly methods: ReadonlyMap<HttpMethod, Runnable>;
  /** The methods served at the request's path (a 405's Allow). */
  readonly allow: (req: Request) => string;
}

export interface DispatcherDeps {
  readonly authenticate: Authenticate;
  /** Requests under it that match no operation are 404 here; others go on to Express. */
  readonly protectedPrefix: string;
  /** Requests under it speak Vault's dialect (api/vault-dialect.ts), an unknown path's 404 included. */
  readonly vaultPrefix?: string;
  readonly clientAddress: ClientAddress;
  readonly onError: ErrorAnswer;
  readonly readBody: BodyReader;
  readonly validators: Validators;
  readonly guard?: Guard;
  /** Where each request is counted while its handler runs, so that a stop waits for it. */
  readonly inFlight?: InFlight;
}

/** What an operation that declares no body takes when a client sends one anyway: `{}` and nothing else. */
const NO_FIELDS = { type: 'object', additionalProperties: false, properties: {} } as const;

/** The operations one method of a template serves: one, or several told apart by their `classify`. */
function compile(operations: readonly Operation[], deps: DispatcherDeps): Runnable {
  const [operation, ...others] = operations as [Operation, ...Operation[]];
  let forms: Runnable['forms'];
  if (others.length > 0) {
    const { classify, query, privilege, body, public: open } = operation;
    const shared = others.every(
      (o) =>
        o.classify === classify &&
        o.query === query &&
        o.privilege === privilege &&
        o.body === body &&
        o.public === open,
    );
    if (classify === undefined || !shared)
      throw new Error(
        `${operation.method} ${operation.template} is declared twice without one classify, query, privilege and body`,
      );
    forms = { classify, byId: new Map(operations.map((o) => [o.docs[0]!.operationId, o])) };
  }
  const { body } = operation;
  let read: Runnable['body'];
  if (body) {
    const validate = deps.validators.body(body.schema);
    read = async (req, res) => {
      if (!body.required && !hasBody(req)) return undefined;
      return validate(await deps.readBody(req, res));
    };
  }
  // A body sent to an operation that takes none is read and checked like any other (UTF-8 JSON, not too
  // deep, no field): an unknown field is refused before anything is done, never ignored.
  const validateEmpty = deps.validators.body(NO_FIELDS);
  const refuseStray: Runnable['refuseStray'] = !checksStrayBody(operation)
    ? undefined
    : async (req, res) => {
        if (!hasBody(req)) return;
        const sent = await deps.readBody(req, res);
        try {
          validateEmpty(sent);
        } catch (err) {
          if (!(err instanceof AppError) || operation.strayBody === undefined) throw err;
          throw invalid(`${err.detail}: ${operation.strayBody}`, err.issues);
        }
      };
  return {
    operation,
    forms,
    query: deps.validators.query(operation.query ?? {}),
    body: read,
    refuseStray,
  };
}

function pathsOf(operations: readonly Operation[], deps: DispatcherDeps): Path[] {
  const byTemplate = new Map<string, Operation[]>();
  for (const op of operations) {
    byTemplate.set(op.template, [...(byTemplate.get(op.template) ?? []), op]);
  }
  return [...byTemplate].map(([template, ops]) => {
    const isPublic = ops.every((o) => o.public === true);
    if (!isPublic && ops.some((o) => o.public === true))
      throw new Error(`${template} mixes public and authenticated operations`);
    const { dialect } = ops[0]!;
    if (ops.some((o) => o.dialect !== dialect))
      throw new Error(`${template} mixes Coffer's and Vault's dialects`);
    return {
      template,
      prefix: templatePrefix(template),
      public: isPublic,
      dialect,
      methods: new Map(
        [...new Set(ops.map((o) => o.method))].map((method) => [
          method,
          compile(
            ops.filter((o) => o.method === method),
            deps,
          ),
        ]),
      ),
      allow: (req: Request) =>
        [...new Set(ops.filter((o) => o.serves?.(req) ?? true).map((o) => o.method))].join(', '),
    };
  });
}

/** A path segment that is `.` or `..`, as sent or percent-encoded (%2e, either case). */
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:\/|$)/i;

// A handler asking for a body its operation does not declare is a bug, not the client's error.
const noBody = (): Promise<never> => Promise.reject(new Error('the operation declares no body'));

export function dispatcher(operations: readonly Operation[], deps: DispatcherDeps) {
  const paths = pathsOf(operations, deps);
  const exact = new Map(paths.filter((p) => p.prefix === undefined).map((p) => [p.template, p]));
  const prefixed = paths.filter((p) => p.prefix !== undefined);
  const find = (path: string): Path | undefined =>
    exact.get(path) ?? prefixed.find((p) => path === p.prefix || path.startsWith(`${p.prefix}/`));

  const run = async (path: Path | undefined, req: Request, res: Response): Promise<void> => {
    // What the request asked for is known before who asks: recorded even when authentication refuses it.
    const asked = path?.methods.get(req.method as HttpMethod);
    if (path) res.locals.route = path.template;
    if (path?.dialect) res.locals.dialect = path.dialect;
    if (asked) {
      res.locals.action = asked.operation.action;
      const named = asked.operation.pathTarget;
      if (named) {
        try {
          auditTarget(res, named(req));
        } catch {
          // A path that names nothing valid: the handler refuses it, saying why.
        }
      }
    }
    // Routed first, then authenticated: an unknown path is 404 and a method the path does not serve 405,
    // with a token or without, as the document's info says (the paths are public in it anyway).
    if (!path) throw new AppError('not_found', 'no such endpoint');
    // HEAD is not served: the document lists GET only, and a HEAD of a key would open and audit it as a read.
    const runnable = asked;
    if (!runnable) {
      const allow = path.allow(req);
      throw new AppError(
        'method_not_allowed',
        `${req.method} is not allowed here; allowed: ${allow}`,
        undefined,
        { Allow: allow },
      );
    }
    if (!path.public) await deps.authenticate(req, res);
    let { operation } = runnable;
    res.locals.action = operation.action;
    deps.guard?.();
    if (operation.privilege) requirePrivilege(principalOf(res), operation.privilege);
    await runnable.refuseStray?.(req, res);
    const read = runnable.body;
    const input: OperationInput<Queries, unknown> = {
      query: runnable.query(req),
      body: read ? () => read(req, res) : noBody,
    };
    const { forms } = runnable;
    if (forms) {
      // Which of the method's operations this request is; they share privilege, query and body.
      operation = forms.byId.get(forms.classify(req, input.query))!;
      res.locals.action = operation.action;
    }
    await operation.handler(req, res, input);
  };

  return (req: Request, res: Response, next: NextFunction): void => {
    // When the request arrived, for its audit entry's duration.
    res.locals.startedAt = performance.now();
    res.locals.client = deps.clientAddress(req);
    const url = rawPath(req);
    const vault = deps.vaultPrefix !== undefined && url.startsWith(deps.vaultPrefix);
    if (vault) res.locals.dialect = 'vault';
    const guarded = vault || url.startsWith(deps.protectedPrefix);
    // A `.` or `..` segment (as sent, or percent-encoded) names no endpoint: a client that resolves it
    // (a browser does) would have asked another one. Refused before anything else, everywhere.
    if (guarded && DOT_SEGMENT.test(url)) {
      deps.onError(
        new AppError(
          'invalid_request',
          'the path has a "." or ".." segment, which names nothing here',
        ),
        req,
        res,
      );
      return;
    }
    const path = find(url);
    if (!path && !guarded) {
      next();
      return;
    }
    const ran = run(path, req, res).catch((err: unknown) => deps.onError(err, req, res));
    deps.inFlight?.track(ran);
  };
}
