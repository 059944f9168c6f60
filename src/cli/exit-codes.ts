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

/**
 * What node's option parser refused, said plainly (its own text names internals: "Option '--ttl <value>'
 * argument missing"); exit 2.
 */
export function argumentsError(
  err: unknown,
  /**
   * The nearest option the command takes to an unknown one (cli/suggest.ts: the server's commands; the
   * client package's coffer-run has no suggester, and no dependency for one).
   */
  suggest?: (name: string) => string | undefined,
): CliError {
  const e = err as NodeJS.ErrnoException;
  const quoted = /'([^']+)'/.exec(e.message ?? '')?.[1]?.split(' ')[0];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const near = quoted === undefined ? undefined : suggest?.(quoted.replace(/^-+/, ''));
      return new CliError(
        `unknown option ${quoted}${near === undefined ? '' : ` — did you mean --${near}?`} (--help lists what this command takes)`,
        EXIT.usage,
      );
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new CliError(
        /argument missing/.test(e.message)
          ? `${quoted} needs a value (--help says which)`
          : /argument is ambiguous/.test(e.message)
            ? `${quoted} needs a value, and the next argument starts with -: write ${quoted}=VALUE if it is the value`
            : `${quoted} takes no value`,
        EXIT.usage,
      );
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new CliError(
        `unexpected argument ${quoted} (--help lists what this command takes)`,
        EXIT.usage,
      );
    default:
      return new CliError(e.message ?? String(err), EXIT.usage);
  }
}
