/**
 * argon2id hashing and verification, with a bound on the work in flight. Each argon2id call takes
 * 64 MiB and tens of milliseconds, so at most `concurrency` run at once. Callers that must wait are queued
 * by the token they verify, and the queues take turns (round robin): a flood of attempts at one token
 * waits behind itself, and the first verification of any other token is next in line, not behind the
 * flood. At most `perKeyLimit` wait for one token and `queueLimit` in all; past that a caller is turned
 * away with 429 at once instead of piling up memory and latency. Requests with verified tokens never come
 * here (auth/authenticator.ts).
 */
import argon2 from 'argon2';
import { AppError } from '../errors.js';

/** OWASP's argon2id recommendation tier (m=64 MiB, t=3, p=4); the parameters are stored in each hash. */
const PARAMETERS = { type: argon2.argon2id, memoryCost: 65536, timeCost: 3, parallelism: 4 } as const;

export interface Argon2GateOptions {
  readonly concurrency?: number;
  readonly queueLimit?: number;
  readonly perKeyLimit?: number;
}

export class Argon2Gate {
  private active = 0;
  private waitingCount = 0;
  /** Waiters by key; a Map keeps its keys in insertion order, which is the order of turns. */
  private readonly queues = new Map<string, (() => void)[]>();
  private readonly concurrency: number;
  private readonly queueLimit: number;
  private readonly perKeyLimit: number;

  constructor(options: Argon2GateOptions = {}) {
    this.concurrency = options.concurrency ?? 2;
    this.queueLimit = options.queueLimit ?? 256;
    this.perKeyLimit = options.perKeyLimit ?? 16;
  }

  hash(secret: string): Promise<string> {
    return this.run('\0hash', () => argon2.hash(secret, PARAMETERS));
  }

  /** True when `secret` matches `hash`; false for a mismatch or a malformed hash. `key` names the token for fair turns. */
  verify(hash: string, secret: string, key = ''): Promise<boolean> {
    return this.run(key, () => argon2.verify(hash, secret).catch(() => false));
  }

  private async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    if (this.active < this.concurrency) this.active++;
    else await this.wait(key);
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private wait(key: string): Promise<void> {
    const queue = this.queues.get(key) ?? [];
    if (this.waitingCount >= this.queueLimit || queue.length >= this.perKeyLimit) {
      throw new AppError('too_many_requests', 'too many token verifications in progress; retry shortly', undefined, { 'Retry-After': '1' });
    }
    if (queue.length === 0) this.queues.set(key, queue);
    this.waitingCount++;
    return new Promise<void>((resolve) => queue.push(resolve));
  }

  /** Hands the slot to the first waiter of the key whose turn it is (that key then goes to the back), or frees it. */
  private release(): void {
    const next = this.queues.entries().next();
    if (next.done) {
      this.active--;
      return;
    }
    const [key, queue] = next.value;
    this.queues.delete(key);
    const resolve = queue.shift()!;
    if (queue.length > 0) this.queues.set(key, queue);
    this.waitingCount--;
    resolve();
  }
}
