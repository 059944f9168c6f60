/**
 * The budget for wrong secrets of known tokens: per client address **and** token, a token bucket of
 * `burst` at once, then `perSecond` more each second. Only argon2 verifications are charged — that is the
 * work the limiter exists to bound — charged when one starts and refunded when it succeeds, so concurrent
 * attempts cannot all slip past the check while argon2 runs. Failures that cost no argon2 (no or a
 * malformed header, an unknown id, an expired or revoked token, a wrong value already refused once) are
 * never charged and always answer 401.
 *
 * Keyed by address and token, someone guessing one token's secret never uses up the budget of the other
 * tokens presented from the same address, such as every other user behind the same reverse proxy. The
 * defaults (100 at once, 2 a second) let a client retry a wrong secret 100 times within a minute and still
 * get 401s; past the budget it gets 429 with Retry-After. Each server process keeps its own buckets.
 */
import { BoundedCache } from '../bounded-cache.js';

interface Bucket {
  tokens: number;
  updated: number;
}

export interface FailureLimiterOptions {
  readonly burst?: number;
  readonly perSecond?: number;
  readonly maxEntries?: number;
}

export class FailureLimiter {
  private readonly buckets: BoundedCache<string, Bucket>;
  private readonly burst: number;
  private readonly perSecond: number;

  constructor(options: FailureLimiterOptions = {}) {
    this.burst = options.burst ?? 100;
    this.perSecond = options.perSecond ?? 2;
    this.buckets = new BoundedCache(options.maxEntries ?? 100_000);
  }

  /** Seconds until `address` may try `tokenId` again; 0 when it may try now. */
  retryAfter(address: string, tokenId: string, now: number): number {
    const bucket = this.refill(address, tokenId, now);
    return bucket.tokens >= 1 ? 0 : Math.ceil((1 - bucket.tokens) / this.perSecond);
  }

  /** Charges one verification; call before it starts. */
  charge(address: string, tokenId: string, now: number): void {
    const bucket = this.refill(address, tokenId, now);
    bucket.tokens = Math.max(0, bucket.tokens - 1);
  }

  /** Gives back the charge of a verification that succeeded. */
  refund(address: string, tokenId: string, now: number): void {
    const bucket = this.refill(address, tokenId, now);
    bucket.tokens = Math.min(this.burst, bucket.tokens + 1);
  }

  private refill(address: string, tokenId: string, now: number): Bucket {
    const key = `${address}\n${tokenId}`;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: this.burst, updated: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((now - bucket.updated) / 1000) * this.perSecond,
    );
    bucket.updated = now;
    return bucket;
  }
}
