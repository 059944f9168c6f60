/**
 * What the people commands share: the client made from COFFER_ADDR and COFFER_TOKEN / COFFER_TOKEN_FILE (a
 * token is never an argument: it would show in `ps` and the shell's history), and the one-line message and
 * exit code for each way a call fails.
 */
import { Coffer } from '../client/coffer.js';
import { CofferError } from '../client/errors.js';
import { CliError, EXIT } from './exit-codes.js';

export function connect(env: NodeJS.ProcessEnv = process.env): Coffer {
  try {
    return new Coffer({}, env);
  } catch (err) {
    throw new CliError(`COFFER_ADDR: ${(err as Error).message}`, EXIT.usage);
  }
}

/** `err` as the command's one line and exit code; `what` names what the call was about. */
export function explain(err: unknown, coffer: Coffer, what: string): unknown {
  if (!(err instanceof CofferError)) return err;
  const detail = err.detail;
  if (err.code === 'no_token') return new CliError(detail, EXIT.usage);
  if (err.status === 0)
    return new CliError(
      `cannot reach Coffer at ${coffer.url}: ${detail}${err.mayHaveApplied ? ' (the change may have been applied: check before repeating it)' : ''}`,
      EXIT.unavailable,
    );
  switch (err.status) {
    case 401:
      return new CliError(`the token was refused (401): ${detail}`, EXIT.denied);
    case 403:
      return new CliError(`forbidden (403): ${detail}`, EXIT.denied);
    case 404:
      return new CliError(`${what}: not found (404)`, EXIT.notFound);
    case 412:
      return new CliError(`${what}: ${detail} (412)`, EXIT.conflict);
    case 429:
    case 503:
      return new CliError(
        `Coffer at ${coffer.url} is unavailable (${err.status} ${err.code}): ${detail}${err.mayHaveApplied ? ' (the change may have been applied: check before repeating it)' : ''}`,
        EXIT.unavailable,
      );
    default: {
      // A 400's fields at fault, as the server named them.
      const fields = err.errors?.length
        ? ` (${err.errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ')})`
        : '';
      return new CliError(`${what}: ${err.status} ${err.code}: ${detail}${fields}`, EXIT.failure);
    }
  }
}

/** Whether `err` means Coffer could not answer (so a fallback copy may stand in), not that it said no. */
export function isOutage(err: unknown): boolean {
  return (
    err instanceof CofferError &&
    (err.status === 0 ? err.code !== 'no_token' : [502, 503, 504].includes(err.status))
  );
}
