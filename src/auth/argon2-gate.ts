/**
 * argon2id hashing and verification, with a bound on the work in flight. Each argon2id call takes
 * 64 MiB and tens of milliseconds, so at most `concurrency` run at once and at most `queueLimit` wait;
 * past that a caller is turned away with 429 at once instead of piling up memory and latency. Requests
 * with verified tokens never come here (auth/authenticator.ts), so a flood of wrong tokens only queues
 * behind itself.
 */
import argon2 from 'argon2';
import { AppError } from '../errors.js';

/** OWASP's argon2id recommendation tier (m=64 MiB, t=3, p=4); the parameters are stored in each hash. */
const PARAMETERS = { type: argon2.argon2id, memoryCost: 65536, timeCost: 3, parallelism: 4 } as const;

export class Argon2Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency = 2,
    private readonly queueLimit = 64,
  ) {}

  hash(secret: string): Promise<string> {
    return this.run(() => argon2.hash(secret, PARAMETERS));
  }

  /** True when `secret` matches `hash`; false for a mismatch or a malformed hash. */
  verify(hash: string, secret: string): Promise<boolean> {
    return this.run(() => argon2.verify(hash, secret).catch(() => false));
  }

  private async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency) {
      if (this.waiting.length >= this.queueLimit) {
        throw new AppError('too_many_requests', 'too many token verifications in progress; retry shortly', undefined, { 'Retry-After': '1' });
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await work();
    } finally {
      // Hand the slot straight to the next waiter, or free it.
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
