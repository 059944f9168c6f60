/**
 * What holds back logins from an address past its failure rate (failure-rate.ts), as a refused token is
 * held back (authenticate.ts): the same rate and the same tarpit.
 */
import type { Request, Response } from 'express';
import { AppError } from '../../errors.js';
import type { FailureRate } from '../failure-rate.js';
import type { LoginGate } from './login.js';
import type { Tarpit } from './tarpit.js';

const addressOf = (req: Request, res: Response): string =>
  res.locals.client ?? req.socket.remoteAddress ?? '';

export function loginGate(failureRate: FailureRate, tarpit: Tarpit, now: () => number): LoginGate {
  return {
    // A refused login past the failure rate of its address is held back and summarized, as a refused token is.
    async refused(req, res) {
      if (failureRate.admit(addressOf(req, res), now())) return;
      res.locals.summarized = true;
      await tarpit.hold();
    },
    // While the address is past that rate, a login is refused (429) before its JWT is even parsed: a flood of
    // bad JWTs costs the server no verification, and the address's well-behaved logins retry after a while.
    async before(req, res) {
      const wait = failureRate.floodingFor(addressOf(req, res), now());
      if (wait === 0) return;
      res.locals.summarized = true;
      await tarpit.hold();
      throw new AppError(
        'too_many_requests',
        'too many refused logins from this address; retry later',
        undefined,
        { 'Retry-After': String(wait) },
      );
    },
  };
}
