/**
 * The errors Coffer shows to clients. Each carries a stable code; the code decides the HTTP status and
 * the title, and whether the detail may be shown. Route code throws these and one handler
 * (http/problem.ts) renders them as RFC 9457 problem+json.
 */

export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'too_many_requests'
  | 'integrity_error'
  | 'audit_unavailable'
  | 'internal';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  too_many_requests: 429,
  integrity_error: 500,
  audit_unavailable: 503,
  internal: 500,
};

const TITLE: Record<ErrorCode, string> = {
  invalid_request: 'Invalid request',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  too_many_requests: 'Too many requests',
  integrity_error: 'Integrity error',
  audit_unavailable: 'Audit log unavailable',
  internal: 'Internal error',
};

/** One schema or field problem, listed in a 400 body's `errors`. */
export interface FieldIssue {
  /** JSON pointer into the request part named by `in` ('' for the whole part). */
  readonly field: string;
  readonly in: 'body' | 'query' | 'path' | 'header' | 'request';
  readonly message: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly title: string;

  /**
   * @param detail shown to the client when the status is below 500; it must never contain a value,
   *   a token or key material.
   */
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly issues?: readonly FieldIssue[],
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = STATUS[code];
    this.title = TITLE[code];
  }
}

export function invalid(detail: string, issues?: readonly FieldIssue[]): AppError {
  return new AppError('invalid_request', detail, issues);
}

/** 403. `what` says which right is missing, e.g. `write on payments/prod` (never more than the caller may know). */
export function forbidden(what?: string): AppError {
  return new AppError(
    'forbidden',
    what === undefined
      ? 'this token is not allowed to do that'
      : `this token is not allowed to ${what}`,
  );
}

export function notFound(detail: string): AppError {
  return new AppError('not_found', detail);
}

/** A setting that stops start-up; main.ts prints `setting: problem` as one line and exits 2. */
export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    problem: string,
  ) {
    super(`${setting}: ${problem}`);
    this.name = 'ConfigError';
  }
}
