/**
 * The HTTP request listener: the features' operations (features.ts, api/operation.ts) compiled into a dispatcher (dispatch.ts) that
 * authenticates everything under /v1 except the OpenAPI document and answers its own errors as
 * problem+json; Express only answers what the dispatcher does not serve (404 outside /v1). Every response
 * is written by the responder (respond.ts), which adds the security headers.
 */

import type { RequestListener } from 'node:http';
import type { Duplex } from 'node:stream';
import express, { type Request, type Response } from 'express';
import type { Authenticate, RouteContext, ServerContext } from '../api/feature.js';
import { InFlight } from '../api/in-flight.js';
import type { Operation } from '../api/operation.js';
import { outcomeWatcher } from '../api/outcome.js';
import { jsonBodyReader } from '../api/request-parts.js';
import { createResponder } from '../api/respond.js';
import { Validators } from '../api/validate.js';
import { VAULT_ROOT } from '../api/vault-dialect.js';
import { FailureSummary } from '../audit/failure-summary.js';
import { clientAddressOf } from './client-address.js';
import { clientErrorListener } from './client-errors.js';
import { consoleFiles } from './console-static.js';
import { dispatcher } from './dispatch.js';
import { notFoundHandler, problemHandler } from './problem.js';
import {
  intentRecorder,
  refuseWhileUnrecorded,
  requestAuditor,
  unrecorded,
} from './request-audit.js';

/** What the request listener serves (the features' operations and authentication), and what it needs itself. */
export interface HttpAppDeps
  extends Pick<
    ServerContext,
    'config' | 'options' | 'log' | 'audit' | 'now' | 'metrics' | 'onIntegrityError'
  > {
  /** The operations it serves, given the responder and the intent recorder it builds (features.ts). */
  readonly operations: (route: RouteContext) => Operation[];
  /** Authenticates a request under /v1 (the auth feature). */
  readonly authenticate: Authenticate;
  /** Served over TLS: only then is Strict-Transport-Security sent. */
  readonly tls: boolean;
}

/** What the HTTP server is given: the request listener, and the answers to what Node cannot parse. */
export interface HttpApp {
  readonly listener: RequestListener;
  /** The requests being worked on: a stop waits for them before closing the audit log and the store. */
  readonly inFlight: InFlight;
  readonly onClientError: (err: NodeJS.ErrnoException, socket: Duplex) => void;
  /** Writes what it still holds for the audit log (the summary of failed authentications). */
  close(): Promise<void>;
}

/** Room for the JSON around a value: the worst case escapes each byte as \u00XX (6 bytes). */
export function bodyLimit(maxValueBytes: number): number {
  return maxValueBytes * 6 + 16 * 1024;
}

export function buildHttpApp(deps: HttpAppDeps): HttpApp {
  const { audit, metrics, config } = deps;
  const inFlight = new InFlight();
  // Failed authentications past the flood rate are counted here, instead of a line each.
  const failureSummary =
    audit &&
    new FailureSummary({
      flushMs: 10_000,
      maxAddresses: 1000,
      write: (fields) => audit.event('auth.failures', fields),
    });
  const respond = createResponder(
    audit ? requestAuditor(audit, failureSummary, deps.now) : undefined,
    deps.tls,
    audit ? () => unrecorded(audit) : undefined,
    metrics && {
      sent(res, status) {
        const started = res.locals.startedAt;
        metrics.answered(
          res.locals.audit?.action ?? res.locals.action ?? 'none',
          status,
          started === undefined ? 0 : (performance.now() - started) / 1000,
        );
      },
      audited: (seconds) => metrics.auditWrite.observe(seconds),
    },
    inFlight,
  );
  const recordIntent = intentRecorder(audit, respond.requestId);
  const operations = deps.operations({ config, respond, recordIntent, now: deps.now });

  const problems = problemHandler(deps.log, respond, deps.onIntegrityError);
  const answerError = (err: unknown, req: Request, res: Response): void =>
    problems(err, req, res, () => undefined);
  const dispatch = dispatcher(operations, {
    authenticate: deps.authenticate,
    protectedPrefix: '/v1/',
    vaultPrefix: `${VAULT_ROOT}/`,
    clientAddress: clientAddressOf(config.trusted_proxies),
    onError: answerError,
    readBody: jsonBodyReader(bodyLimit(config.max_value_bytes)),
    validators: new Validators(),
    inFlight,
    ...(audit ? { guard: refuseWhileUnrecorded(audit) } : {}),
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', false); // queries are read strictly by request-parts.ts
  // The server's own address opens the web console.
  app.get('/', (_req, res) => respond.empty(res, 302, [['Location', '/ui/']]));
  app.use('/ui', consoleFiles(deps.tls));
  app.use(notFoundHandler);
  app.use(problems);

  // The response each connection is serving: a request whose body does not arrive in time is answered
  // 408 through it (client-errors.ts). A connection's next request replaces it.
  const serving = new WeakMap<Duplex, Response>();
  const onClientError = clientErrorListener({
    inFlight: serving,
    respond,
    tls: deps.tls,
    requestTimeoutSeconds: config.request_timeout_seconds,
    log: deps.log,
  });
  // Coffer's own routes are served straight from Node's request, without Express's per-request set-up (its
  // router walk, the prototype swaps of req and res): the dispatcher needs only originalUrl and locals.
  // Whatever it does not serve (paths outside /v1/) goes on to Express, for the same 404. Tests that watch
  // outcomes (StartOptions.onOutcome) take this same path.
  const onOutcome = deps.options.onOutcome;
  const watch = onOutcome === undefined ? undefined : outcomeWatcher(onOutcome);
  const listener: RequestListener = (req, res) => {
    const request = req as Request;
    const response = res as Response;
    request.originalUrl = req.url ?? '/';
    response.locals = Object.create(null) as Response['locals'];
    serving.set(req.socket, response);
    watch?.(request, response);
    try {
      dispatch(request, response, () => app(req, res));
    } catch (err) {
      answerError(err, request, response);
    }
  };
  return {
    listener,
    onClientError,
    inFlight,
    close: async () => failureSummary?.close(),
  };
}
