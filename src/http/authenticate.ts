import type { Request, Response } from 'express';
import { unauthorized, type Authenticator } from '../auth/authenticator.js';
import type { Principal } from '../auth/principal.js';
import { BEARER_VALUE } from '../auth/token-format.js';

const BEARER = /^Bearer +(\S+) *$/i;

/**
 * Requires `Authorization: Bearer <token>` and puts the caller's Principal in `res.locals.principal`;
 * rejects with 401 (or 429 when the address is over its budget).
 */
export function authenticate(authenticator: Authenticator) {
  return async (req: Request, res: Response): Promise<void> => {
    const header = req.headers.authorization;
    if (header === undefined) throw unauthorized('a bearer token is required (Authorization: Bearer <token>)');
    const value = BEARER.exec(header)?.[1];
    if (value === undefined || !BEARER_VALUE.test(value)) throw unauthorized('the Authorization header is not a well-formed bearer token');
    res.locals.principal = await authenticator.authenticate(value, req.socket.remoteAddress ?? '');
  };
}

export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
