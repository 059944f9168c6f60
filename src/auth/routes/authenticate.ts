import type { Request, Response } from 'express';
import type { Authenticate } from '../../api/feature.js';
import { AppError, invalid } from '../../errors.js';
import type { Authenticator } from '../authenticator.js';
import type { FailureRate } from '../failure-rate.js';
import { BEARER_VALUE } from '../token-format.js';
import type { Tarpit } from './tarpit.js';

const BEARER = /^Bearer +(\S+) *$/i;

/** A web console session's cookie as a credential (console-cookie.ts), used when no Authorization is sent. */
export interface ConsoleCookie {
  /** The session id the request's cookie holds, if any. */
  sessionOf(req: Request): string | undefined;
  /** Puts the session's principal in `res.locals`; 401 once it has ended, 403 without its CSRF header. */
  authenticate(req: Request, res: Response, sessionId: string): Promise<void>;
}

/**
 * Requires exactly one `Authorization: Bearer <token>` header and puts the caller's Principal in
 * `res.locals.principal`; rejects with 401, with 400 for a repeated Authorization header (which of two
 * credentials would count is not guessed), or with 429 when the client is past its budget of wrong secrets
 * for that token. A 429, and a 401 past the failure rate of its address (auth/failure-rate.ts), is held back
 * by the tarpit before it is sent, so a flooding client gets about one answer per second per connection
 * instead of thousands of cheap ones; such a 401 is marked for a summary audit entry.
 */
export function authenticate(
  authenticator: Authenticator,
  tarpit: Tarpit,
  failures: FailureRate,
  now: () => number,
  console?: ConsoleCookie,
): Authenticate {
  return async (req, res) => {
    const address = res.locals.client ?? req.socket.remoteAddress ?? '';
    try {
      if (repeatedAuthorization(req)) throw invalid('send one Authorization header, not several');
      // Vault's clients send their token in X-Vault-Token (api/vault-dialect.ts), on its routes alone.
      const header =
        req.headers.authorization ?? (res.locals.dialect === 'vault' ? vaultToken(req) : undefined);
      const sessionId = header === undefined ? console?.sessionOf(req) : undefined;
      if (sessionId !== undefined && console) {
        await console.authenticate(req, res, sessionId);
        return;
      }
      if (header === undefined)
        throw authenticator.reject('a bearer token is required (Authorization: Bearer <token>)');
      const value = BEARER.exec(header)?.[1];
      if (value === undefined || !BEARER_VALUE.test(value))
        throw authenticator.reject('the Authorization header is not a well-formed bearer token');
      res.locals.principal = await authenticator.authenticate(value, address);
      res.locals.reauthenticate = () => authenticator.authenticate(value, address);
    } catch (err) {
      if (
        err instanceof AppError &&
        (err.code === 'unauthorized' || err.code === 'too_many_requests')
      ) {
        // A flood of failures from this address (or from everywhere): summarized in the audit log, held back.
        const flood = !failures.admit(address, now());
        if (flood) res.locals.summarized = true;
        if (flood || err.code === 'too_many_requests') await tarpit.hold();
      }
      throw err;
    }
  };
}

/** X-Vault-Token as an Authorization header's value; one such header only. */
function vaultToken(req: Request): string | undefined {
  const sent = req.headers['x-vault-token'];
  if (sent === undefined) return undefined;
  if (Array.isArray(sent) || sent.includes(',')) throw invalid('send one X-Vault-Token header');
  return `Bearer ${sent}`;
}

/** Node keeps only the first of several Authorization headers in `headers`; the raw list has them all. */
function repeatedAuthorization(req: Request): boolean {
  let seen = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization' && ++seen > 1)
      return true;
  return false;
}
