/**
 * The coffer command's exit codes (docs/cli.md), the same for every command; `coffer run` passes its
 * child's code through once the child has started.
 */
export const EXIT = {
  ok: 0,
  /** Anything else that failed (the server refused the request for another reason, a check failed). */
  failure: 1,
  /** Bad arguments, or no token configured. */
  usage: 2,
  /** 404: no such key, namespace, version or token. */
  notFound: 3,
  /** 401 or 403: the token is not valid, or may not do this. */
  denied: 4,
  /** The server could not be reached, did not answer in time, or answered 503 / 429 after the retries. */
  unavailable: 5,
  /** 412: check-and-set found another version. */
  conflict: 6,
  /** `coffer run`: the command could not be run (126: not executable; 127: not found). */
  cannotExecute: 126,
  commandNotFound: 127,
} as const;

/** A failure the command reports on one line (`coffer: …`) and exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
