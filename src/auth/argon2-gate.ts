/**
 * argon2id hashing and verification, with bounds on the work. At most `concurrency` run at once. Callers
 * that must wait are queued by key — the authenticator's key is the client address and the token — and the
 * queues take turns (round robin): a flood of attempts at one key waits behind itself, and the first
 * verification at any other key is next in line, not behind the flood. At most `perKeyLimit` wait for one
 * key and `queueLimit` in all; past that a caller is turned away with 429 at once instead of piling up
 * memory and latency.
 *
 * Verifications are also paced: each one starting draws from a bucket (`paced`: `burst` at once, then
 * `perSecond`, or only `busyPerSecond` while the process is busy serving), and a successful one gives its
 * draw back. Correct tokens therefore never wait for the bucket, while wrong secrets — a flood — get at
 * most that many verifications a second in this process and wait their turn for the rest, so that they
 * cannot take the CPU from authenticated requests. "Busy" is the main thread's event loop running at
 * least half the time over the last quarter second or more (argon2 itself runs on the thread pool, so it
 * does not count): an idle server verifies a client's mistyped token quickly, a loaded one keeps its CPU
 * for the requests it is serving. Requests with verified tokens never come here (auth/authenticator.ts).
 */
import { performance } from 'node:perf_hooks';
import argon2 from 'argon2';
import { AppError } from '../errors.js';

/**
 * argon2id with OWASP's recommended minimum (m=19 MiB, t=2, p=1): one thread, ~25 ms. Tokens are 256-bit
 * random secrets, which no parameters make guessable or less so; the hash guards a chosen root token
 * (COFFER_ROOT_TOKEN, at least 32 characters) and bounds what a stolen store gives away. Heavier settings
 * (m=64 MiB, t=3, p=4 before 2026-11: ~175 ms of CPU on four threads) let a flood of wrong secrets take the
 * whole CPU from authenticated requests. The parameters are stored in each hash, so older hashes keep
 * verifying under theirs.
 */
const PARAMETERS = {
  type: argon2.argon2id,
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1,
} as const;

/** The turn of new hashes (token creation by an admin): bounded by `queueLimit` only, not `perKeyLimit`. */
const HASH_KEY = '\0hash';

export interface Argon2GateOptions {
  readonly concurrency?: number;
  readonly queueLimit?: number;
  readonly perKeyLimit?: number;
  /** Verifications that may start before their outcome is known: `burst` at once, then `perSecond` (`busyPerSecond` while busy). */
  readonly paced?: Pacing;
  /** Whether the process is busy serving now (default: the event loop's utilization, eventLoopBusy()). */
  readonly busy?: () => boolean;
}

export interface Pacing {
  readonly burst: number;
  readonly perSecond: number;
  readonly busyPerSecond?: number;
}

/**
 * True while this thread's event loop was active at least `threshold` of the time, judged over windows of
 * at least `windowMs`: the last complete window's verdict holds until the next one completes.
 */
export function eventLoopBusy(threshold = 0.5, windowMs = 250): () => boolean {
  let mark = performance.eventLoopUtilization();
  let busy = false;
  return () => {
    const current = performance.eventLoopUtilization();
    const window = performance.eventLoopUtilization(current, mark);
    if (window.idle + window.active >= windowMs) {
      busy = window.utilization >= threshold;
      mark = current;
    }
    return busy;
  };
}

interface Waiter {
  readonly paced: boolean;
  readonly start: () => void;
}

export class Argon2Gate {
  private active = 0;
  private waitingCount = 0;
  /** Waiters by key; a Map keeps its keys in insertion order, which is the order of turns. */
  private readonly queues = new Map<string, Waiter[]>();
  private readonly concurrency: number;
  private readonly queueLimit: number;
  private readonly perKeyLimit: number;
  private readonly pacing: Required<Pacing>;
  private readonly busy: () => boolean;
  private budget: number;
  private budgetAt = performance.now();
  private wake: NodeJS.Timeout | null = null;

  constructor(options: Argon2GateOptions = {}) {
    this.concurrency = options.concurrency ?? 2;
    this.queueLimit = options.queueLimit ?? 256;
    this.perKeyLimit = options.perKeyLimit ?? 16;
    const paced = options.paced ?? { burst: 10, perSecond: 5, busyPerSecond: 1 };
    this.pacing = { ...paced, busyPerSecond: paced.busyPerSecond ?? paced.perSecond };
    this.busy = options.busy ?? eventLoopBusy();
    this.budget = this.pacing.burst;
  }

  /** A new hash (token creation, root token set-up): not paced, it is not a guess. */
  hash(secret: string): Promise<string> {
    return this.run(HASH_KEY, false, () => argon2.hash(secret, PARAMETERS));
  }

  /** True when `secret` matches `hash`; false for a mismatch or a malformed hash. `key` names the token for fair turns. */
  verify(hash: string, secret: string, key = ''): Promise<boolean> {
    return this.run(key, true, async () => {
      const ok = await argon2.verify(hash, secret).catch(() => false);
      if (ok) this.refund();
      return ok;
    });
  }

  private async run<T>(key: string, paced: boolean, work: () => Promise<T>): Promise<T> {
    if (this.queues.size === 0 && this.startable(paced)) this.begin(paced);
    else await this.wait(key, paced);
    try {
      return await work();
    } finally {
      this.active--;
      this.pump();
    }
  }

  /** Verifications a second the bucket refills by now. */
  private rate(): number {
    return this.busy() ? this.pacing.busyPerSecond : this.pacing.perSecond;
  }

  private refill(): void {
    const now = performance.now();
    this.budget = Math.min(
      this.pacing.burst,
      this.budget + ((now - this.budgetAt) / 1000) * this.rate(),
    );
    this.budgetAt = now;
  }

  private startable(paced: boolean): boolean {
    if (this.active >= this.concurrency) return false;
    if (!paced) return true;
    this.refill();
    return this.budget >= 1;
  }

  private begin(paced: boolean): void {
    this.active++;
    if (paced) this.budget -= 1;
  }

  private refund(): void {
    this.refill();
    this.budget = Math.min(this.pacing.burst, this.budget + 1);
    this.pump();
  }

  private wait(key: string, paced: boolean): Promise<void> {
    const queue = this.queues.get(key) ?? [];
    if (
      this.waitingCount >= this.queueLimit ||
      (key !== HASH_KEY && queue.length >= this.perKeyLimit)
    ) {
      throw new AppError(
        'too_many_requests',
        'too many token verifications in progress; retry shortly',
        undefined,
        { 'Retry-After': '1' },
      );
    }
    if (queue.length === 0) this.queues.set(key, queue);
    this.waitingCount++;
    const started = new Promise<void>((resolve) => queue.push({ paced, start: resolve }));
    this.pump();
    return started;
  }

  /** Starts waiters, taking turns by key, while there is a free slot and (for verifications) budget. */
  private pump(): void {
    for (;;) {
      if (this.active >= this.concurrency) return;
      let chosen: [string, Waiter[]] | undefined;
      for (const entry of this.queues) {
        if (this.startable(entry[1][0]!.paced)) {
          chosen = entry;
          break;
        }
      }
      if (!chosen) break;
      const [key, queue] = chosen;
      this.queues.delete(key);
      const waiter = queue.shift()!;
      if (queue.length > 0) this.queues.set(key, queue); // to the back of the turns
      this.waitingCount--;
      this.begin(waiter.paced);
      waiter.start();
    }
    // Waiters held back only by the budget: look again when it has refilled by one.
    if (this.queues.size > 0 && this.active < this.concurrency && this.wake === null) {
      const ms = Math.max(1, ((1 - this.budget) / this.rate()) * 1000);
      this.wake = setTimeout(() => {
        this.wake = null;
        this.pump();
      }, ms);
      this.wake.unref();
    }
  }
}
