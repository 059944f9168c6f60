/**
 * The errors Coffer shows to clients. Each carries a stable code; the code decides the HTTP status and
 * the title, and whether the detail may be shown. Route code throws these, and one function
 * (api/respond.ts, problemBody) renders every one as an RFC 9457 problem+json body.
 */

/**
 * Every error code: its HTTP status, its title, and whether its detail may be shown to the client. A
 * detail is shown for client errors (below 500) and for integrity errors (which say what failed its check,
 * never the value); for any other server error the body says only that an internal error occurred, and
 * the log has the rest.
 */
const ERRORS = {
  invalid_request: { status: 400, title: 'Invalid request', showDetail: true },
  unauthorized: { status: 401, title: 'Unauthorized', showDetail: true },
  forbidden: { status: 403, title: 'Forbidden', showDetail: true },
  not_found: { status: 404, title: 'Not found', showDetail: true },
  method_not_allowed: { status: 405, title: 'Method not allowed', showDetail: true },
  request_timeout: { status: 408, title: 'Request timeout', showDetail: true },
  conflict: { status: 409, title: 'Conflict', showDetail: true },
  events_expired: { status: 410, title: 'Events no longer kept', showDetail: true },
  precondition_failed: { status: 412, title: 'Precondition failed', showDetail: true },
  precondition_required: { status: 428, title: 'Precondition required', showDetail: true },
  payload_too_large: { status: 413, title: 'Payload too large', showDetail: true },
  unsupported_media_type: { status: 415, title: 'Unsupported media type', showDetail: true },
  too_many_requests: { status: 429, title: 'Too many requests', showDetail: true },
  headers_too_large: { status: 431, title: 'Request header fields too large', showDetail: true },
  integrity_error: { status: 500, title: 'Integrity error', showDetail: true },
  audit_unavailable: { status: 503, title: 'Audit log unavailable', showDetail: true },
  storage_unavailable: { status: 503, title: 'Storage unavailable', showDetail: true },
  internal: { status: 500, title: 'Internal error', showDetail: false },
} as const satisfies Record<string, { status: number; title: string; showDetail: boolean }>;

export type ErrorCode = keyof typeof ERRORS;

/** Every error code, in the table's order (the OpenAPI document lists them). */
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** The detail a client sees for an error of `code`. */
export function shownDetail(code: ErrorCode, detail: string): string {
  return ERRORS[code].showDetail ? detail : 'an internal error occurred';
}

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
   * @param detail shown to the client unless the code hides it (ERRORS); it must never contain a value,
   *   a token or key material.
   * @param members extension members of the problem body (RFC 9457, 3.2), e.g. the health report of a
   *   503; they never replace the standard ones.
   */
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly issues?: readonly FieldIssue[],
    readonly headers?: Readonly<Record<string, string>>,
    readonly members?: Readonly<Record<string, unknown>>,
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = ERRORS[code].status;
    this.title = ERRORS[code].title;
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
