/**
 * The one error the client throws: a problem+json answer from the server (status, code and detail as the
 * server sent them), or no answer at all (status 0: the server could not be reached, the call timed out,
 * or the connection was lost). Never the token, and never a value: the server's problems hold neither.
 */
export class CofferError extends Error {
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The server's error code (`forbidden`, `not_found`, `precondition_failed`, …), or `unreachable`, `timeout`, `connection_lost`. */
  readonly code: string;
  readonly detail: string;
  /** X-Request-Id of the answer, for finding the call in the audit log. */
  readonly requestId: string | undefined;
  /** On a 400: which fields were wrong and why. */
  readonly errors: readonly { field: string; in?: string; message: string }[] | undefined;
  /** On a 412: the key's latest version now (0: it does not exist). */
  readonly currentVersion: number | undefined;
  /**
   * True when the call changed something or may have (a write whose connection was lost after it was sent,
   * or that timed out): the client never repeats such a call by itself, and the caller must check.
   */
  readonly mayHaveApplied: boolean;

  constructor(init: {
    status: number;
    code: string;
    detail: string;
    requestId?: string | undefined;
    errors?: readonly { field: string; in?: string; message: string }[] | undefined;
    currentVersion?: number | undefined;
    mayHaveApplied?: boolean;
    cause?: unknown;
  }) {
    super(
      init.status === 0
        ? `${init.code}: ${init.detail}`
        : `${init.status} ${init.code}: ${init.detail}`,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.name = 'CofferError';
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.requestId = init.requestId;
    this.errors = init.errors;
    this.currentVersion = init.currentVersion;
    this.mayHaveApplied = init.mayHaveApplied ?? false;
  }
}
