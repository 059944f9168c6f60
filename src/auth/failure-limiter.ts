/**
 * Limits unverified authentication attempts per client address with a token bucket: `burst` at once,
 * then `perSecond` more each second. An attempt is charged before its verification starts and refunded
 * when it succeeds, so concurrent attempts cannot all slip past the check while argon2 is still running,
 * and only failures use up the budget. An address over its budget gets 429 with Retry-After for any
 * token that is not already verified; requests with verified tokens are never limited, so people behind
 * the same address as an attacker keep working.
 *
 * The client address is the socket's peer address; proxy headers are not trusted. Each server process
 * keeps its own buckets, so with N workers an address gets up to N times the budget.
 */
import { BoundedCache } from './bounded-cache.js';

interface Bucket {
  tokens: number;
  updated: number;
}

export interface FailureLimiterOptions {
  readonly burst?: number;
  readonly perSecond?: number;
  readonly maxAddresses?: number;
}

export class FailureLimiter {
  private readonly buckets: BoundedCache<string, Bucket>;
  private readonly burst: number;
  private readonly perSecond: number;

  constructor(options: FailureLimiterOptions = {}) {
    // One argon2id verification costs ~4 threads × tens of ms here: a budget of 1/s per address keeps a
    // single source from taking more than a small share of the machine. (config: auth_failures)
    this.burst = options.burst ?? 10;
    this.perSecond = options.perSecond ?? 1;
    this.buckets = new BoundedCache(options.maxAddresses ?? 100_000);
  }

  /** Seconds until `address` may try again; 0 when it may try now. */
  retryAfter(address: string, now: number): number {
    const bucket = this.refill(address, now);
    return bucket.tokens >= 1 ? 0 : Math.ceil((1 - bucket.tokens) / this.perSecond);
  }

  /** Charges one attempt; call before verifying. */
  charge(address: string, now: number): void {
    const bucket = this.refill(address, now);
    bucket.tokens = Math.max(0, bucket.tokens - 1);
  }

  /** Gives back the charge of an attempt that succeeded. */
  refund(address: string, now: number): void {
    const bucket = this.refill(address, now);
    bucket.tokens = Math.min(this.burst, bucket.tokens + 1);
  }

  private refill(address: string, now: number): Bucket {
    let bucket = this.buckets.get(address);
    if (!bucket) {
      bucket = { tokens: this.burst, updated: now };
      this.buckets.set(address, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.updated) / 1000) * this.perSecond);
    bucket.updated = now;
    return bucket;
  }
}
