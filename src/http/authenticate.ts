import type { NextFunction, Request, Response } from 'express';
import { unauthorized, type Authenticator } from '../auth/authenticator.js';
import type { Principal } from '../auth/principal.js';
import { BEARER_VALUE } from '../auth/token-format.js';

const BEARER = /^Bearer +(\S+) *$/i;

/** Requires `Authorization: Bearer <token>` and puts the caller's Principal in `res.locals.principal`. */
export function authenticate(authenticator: Authenticator) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.headers.authorization;
    if (header === undefined) return next(unauthorized('a bearer token is required (Authorization: Bearer <token>)'));
    const value = BEARER.exec(header)?.[1];
    if (value === undefined || !BEARER_VALUE.test(value)) return next(unauthorized('the Authorization header is not a well-formed bearer token'));
    authenticator.authenticate(value, req.socket.remoteAddress ?? '').then((principal) => {
      res.locals.principal = principal;
      next();
    }, next);
  };
}

export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
