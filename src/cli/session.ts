/**
 * What the people commands share: the client made from COFFER_ADDR and COFFER_TOKEN / COFFER_TOKEN_FILE (a
 * token is never an argument: it would show in `ps` and the shell's history), a JWT login, or else the
 * token `coffer login --oidc` stored for that server (stored-login.ts); and the one-line message and exit
 * code for each way a call fails.
 */
import { Coffer } from '../client/coffer.js';
import { CofferError } from '../client/errors.js';
import { CliError, EXIT } from './exit-codes.js';
import { jwtTokenCache } from './jwt-token-cache.js';
import { readStoredLogin, sameServer } from './stored-login.js';

/** The clients that use a stored sign-in: their 401 says to sign in again. */
const signedIn = new WeakSet<Coffer>();

const OWN_CREDENTIALS = [
  'COFFER_TOKEN',
  'COFFER_TOKEN_FILE',
  'COFFER_JWT_FILE',
  'COFFER_LOGIN_ROLE',
];

export function connect(env: NodeJS.ProcessEnv = process.env): Coffer {
  const stored = OWN_CREDENTIALS.some((name) => env[name]) ? undefined : readStoredLogin(env);
  // A stored sign-in goes only to the server it came from.
  // Its expiry is the server's to judge: `coffer token renew` moves it past the one stored.
  const usable = stored && (!env.COFFER_ADDR || sameServer(env.COFFER_ADDR, stored.addr));
  try {
    if (stored && usable) {
      const coffer = new Coffer({ url: env.COFFER_ADDR || stored.addr, token: stored.token }, env);
      signedIn.add(coffer);
      return coffer;
    }
    // A JWT login (and no token beside it): the token it gets is kept for the next command.
    if (
      env.COFFER_JWT_FILE &&
      env.COFFER_LOGIN_ROLE &&
      !env.COFFER_TOKEN &&
      !env.COFFER_TOKEN_FILE
    ) {
      let server = '';
      const coffer = new Coffer(
        {
          jwtLogin: {
            role: env.COFFER_LOGIN_ROLE,
            jwtFile: env.COFFER_JWT_FILE,
            cache: jwtTokenCache(env, () => server),
          },
        },
        env,
      );
      server = coffer.url;
      return coffer;
    }
    return new Coffer({}, env);
  } catch (err) {
    // A problem with the token or JWT settings says so itself; anything else is the address's.
    const setting = (err as { setting?: string }).setting;
    throw new CliError(
      setting ? (err as Error).message : `COFFER_ADDR: ${(err as Error).message}`,
      EXIT.usage,
    );
  }
}

/** `err` as the command's one line and exit code; `what` names what the call was about. */
export function explain(err: unknown, coffer: Coffer, what: string): unknown {
  if (!(err instanceof CofferError)) return err;
  const detail = err.detail;
  if (err.code === 'no_token')
    return new CliError(
      detail.startsWith('no token:') ? `${detail}, or sign in (coffer login --oidc)` : detail,
      EXIT.usage,
    );
  if (err.status === 0)
    return new CliError(
      `cannot reach Coffer at ${coffer.url}: ${detail}${err.mayHaveApplied ? ' (the change may have been applied: check before repeating it)' : ''}`,
      EXIT.unavailable,
    );
  switch (err.status) {
    case 401:
      return new CliError(
        signedIn.has(coffer)
          ? `your sign-in was refused (401: revoked or expired): sign in again (coffer login --oidc)`
          : `the token was refused (401): ${detail}${err.requestId ? ` [request ${err.requestId}]` : ''}`,
        EXIT.denied,
      );
    case 403:
      return new CliError(`forbidden (403): ${detail}`, EXIT.denied);
    case 404:
      // A key in the trash, or a version deleted or destroyed alone, is not "not found": the server says which.
      if (/^(the key|version \d+) is (deleted|destroyed)$/.test(detail))
        return new CliError(
          `${what}: ${detail} (404)${detail === 'the key is deleted' ? `; coffer kv undelete ${what} brings it back` : ''}`,
          EXIT.notFound,
        );
      // An undelete of a key that is live (or was never written): there is nothing in the trash to bring back.
      if (detail === 'no deleted key by that name')
        return new CliError(`${what}: not in the trash (404)`, EXIT.notFound);
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
      // A 400's fields at fault, as the server named them: those the detail does not say already (a 400
      // that names no field repeats the detail as its one entry; others spell the field out in it).
      const named = (err.errors ?? []).filter((e) => !detail.includes(e.message));
      const fields = named.length
        ? ` (${named.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ')})`
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
