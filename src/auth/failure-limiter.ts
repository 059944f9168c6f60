/**
 * Limits failed authentications per client address with a token bucket: `burst` failures at once, then
 * `perSecond` more each second. An address over its budget gets 429 with Retry-After for any token that
 * is not already verified; requests with verified tokens are never limited, so people behind the same
 * address as an attacker keep working.
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
    this.burst = options.burst ?? 20;
    this.perSecond = options.perSecond ?? 5;
    this.buckets = new BoundedCache(options.maxAddresses ?? 100_000);
  }

  /** Seconds until `address` may try again; 0 when it may try now. */
  retryAfter(address: string, now: number): number {
    const bucket = this.refill(address, now);
    return bucket.tokens >= 1 ? 0 : Math.ceil((1 - bucket.tokens) / this.perSecond);
  }

  recordFailure(address: string, now: number): void {
    const bucket = this.refill(address, now);
    bucket.tokens = Math.max(0, bucket.tokens - 1);
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
