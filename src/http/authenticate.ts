import type { Request, Response } from 'express';
import type { Authenticator } from '../auth/authenticator.js';
import type { Principal } from '../auth/principal.js';
import { BEARER_VALUE } from '../auth/token-format.js';
import { AppError } from '../errors.js';
import type { Tarpit } from './tarpit.js';

const BEARER = /^Bearer +(\S+) *$/i;

/**
 * Requires `Authorization: Bearer <token>` and puts the caller's Principal in `res.locals.principal`;
 * rejects with 401, or with 429 when the address is over its budget of failures. A 429 is held back
 * by the tarpit before it is sent, so a client that ignores Retry-After gets about one answer per
 * second per connection instead of thousands of cheap ones that would crowd out everybody else.
 */
export function authenticate(authenticator: Authenticator, tarpit: Tarpit) {
  return async (req: Request, res: Response): Promise<void> => {
    const address = req.socket.remoteAddress ?? '';
    try {
      const header = req.headers.authorization;
      if (header === undefined) throw authenticator.reject(address, 'a bearer token is required (Authorization: Bearer <token>)');
      const value = BEARER.exec(header)?.[1];
      if (value === undefined || !BEARER_VALUE.test(value)) throw authenticator.reject(address, 'the Authorization header is not a well-formed bearer token');
      res.locals.principal = await authenticator.authenticate(value, address);
    } catch (err) {
      if (err instanceof AppError && err.code === 'too_many_requests') await tarpit.hold();
      throw err;
    }
  };
}

export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
