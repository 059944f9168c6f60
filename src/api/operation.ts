/**
 * One route record per operation Coffer serves: method, path template, audit action, privilege, query and
 * body schemas, handler and its documentation, declared once (a feature's routes/*.ts). The dispatcher
 * (http/dispatch.ts) enforces the privilege, refuses unknown query parameters and validates the body from
 * it; the audit entry takes its action name from it; the OpenAPI document (openapi.ts) is built from it.
 */
import type { Request, Response } from 'express';
import type { Privilege } from '../model/policies.js';
import type { AuditTarget } from './audit-target.js';
import type { Queries, QueryValues } from './query-params.js';

/** PATCH: Vault's KV v2 merge patch, and Coffer's own change of a key's metadata (never its value). */
export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE' | 'PATCH';

/** What the dispatcher hands a handler: the checked, typed query, and the body read and validated on demand. */
export interface OperationInput<Q extends Queries, B> {
  readonly query: QueryValues<Q>;
  /**
   * Reads the body and validates it against the operation's schema. A handler calls it once it has
   * authorized what it can without the body, so a forbidden caller's body is never parsed. Resolves to
   * undefined when the body is optional and none was sent.
   */
  readonly body: () => Promise<B>;
}

/** How one operation appears in the OpenAPI document. */
export interface OperationDoc {
  readonly operationId: string;
  readonly summary: string;
  /** The documented path, when it is not the route's template (a kv GET is documented in three forms). */
  readonly path?: string;
  readonly pathParams?: readonly object[];
  /** The query parameters this form documents: all of the operation's by default. */
  readonly query?: readonly string[];
  /** The answers other than problems. */
  readonly responses: Readonly<Record<string, object>>;
  /**
   * Problem statuses beyond those every such operation may give, which the document adds itself: 400 (query),
   * 405, 500, 401 and 429 with a token, 403 with a privilege, 413 and 415 with a body, 503 (audit, storage).
   */
  readonly errors?: readonly number[];
}

export interface Operation<Q extends Queries = Queries, B = unknown> {
  readonly method: HttpMethod;
  /**
   * The path as logs and audit entries name it. A template with a `{parameter}` serves everything below
   * the part before it (`/v1/kv/{path}`: /v1/kv/...); one without serves that path only.
   */
  readonly template: string;
  /** The audit entry's action (a handler may name a more precise one, e.g. a kv GET that lists). */
  readonly action: string;
  /** The system privilege the caller must hold; checked by the dispatcher before the handler runs. */
  readonly privilege?: Privilege;
  /** Served without a token. */
  readonly public?: boolean;
  /**
   * Spoken as HashiCorp Vault speaks it (api/vault-dialect.ts), for Vault's clients: the token may come in
   * `X-Vault-Token`, and a refusal is `{"errors": […]}` with Vault's status. Unset: Coffer's own API.
   */
  readonly dialect?: 'vault';
  /**
   * The query parameters it accepts (query-params.ts); any other, and a value its schema refuses, is refused
   * with 400 before the handler runs.
   */
  readonly query?: Q;
  readonly body?: { readonly schema: object; readonly required: boolean };
  /**
   * What the path names (a namespace, a key), recorded in the audit entry from the start: a request
   * refused before its handler runs — a bad token, say — still says what it asked for.
   */
  readonly pathTarget?: (req: Request) => AuditTarget;
  /**
   * For an operation that takes no body: what to tell a caller who sent one, beside the field it sent
   * (POST on a key undeletes: a write is PUT).
   */
  readonly strayBody?: string;
  /**
   * Where one template covers paths the operation never applies to (`/v1/kv/{path}`: a PUT needs a key,
   * so not `/v1/kv/payments`): false there, and a 405's Allow leaves the method out, as the document does.
   */
  readonly serves?: (req: Request) => boolean;
  /**
   * Where several operations share a method and template (a kv GET lists a namespace, reads a key or lists
   * its versions), each declares the same `classify` and query: given the request and its checked query, it
   * names the operationId (`docs[0]`) of the one this request is, or throws the 400 saying why none applies.
   * The dispatcher runs it before any of them, so each handler serves one operation.
   */
  readonly classify?: (req: Request, query: QueryValues<Q>) => string;
  readonly docs: readonly OperationDoc[];
  handler(req: Request, res: Response, input: OperationInput<Q, B>): void | Promise<void>;
}

/** The part of a template before its first parameter, when it has one. */
export function templatePrefix(template: string): string | undefined {
  const at = template.indexOf('/{');
  return at < 0 ? undefined : template.slice(0, at);
}

/**
 * An operation without a body that a client may still send one to (every method but GET): the dispatcher
 * reads such a body and refuses any field in it (400; 413, 415 as for any body), the document says so.
 */
export function checksStrayBody(op: Pick<Operation, 'body' | 'method'>): boolean {
  return op.body === undefined && op.method !== 'GET';
}
