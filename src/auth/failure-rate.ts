/**
 * How fast failed authentications arrive, per client address and in all. Below the rate, every failure is
 * an ordinary 401 (or 429) with its own audit line. Past it — a flood — the address's failures are counted
 * into summary audit entries instead of one line each (audit/failure-summary.ts), and their answers are held
 * back a second (the tarpit), so that anonymous traffic can neither fill the disk with audit lines nor take
 * the CPU from authenticated requests. The status stays what the contract says: a 401 stays a 401.
 *
 * Two token buckets: per address (default 20 at once, then 5 a second: `auth_failures.flood_burst`,
 * `flood_per_second`) and for all addresses together (ten times that), so an attacker who rotates addresses
 * is bounded too.
 */
import { BoundedCache } from '../bounded-cache.js';

interface Bucket {
  tokens: number;
  updated: number;
}

export interface Rate {
  readonly burst: number;
  readonly perSecond: number;
}

/** What `bucket` holds at `now`, refilled at the rate since its last update. */
function refilled(bucket: Bucket, rate: Rate, now: number): number {
  return Math.min(rate.burst, bucket.tokens + ((now - bucket.updated) / 1000) * rate.perSecond);
}

function take(bucket: Bucket, rate: Rate, now: number): boolean {
  bucket.tokens = refilled(bucket, rate, now);
  bucket.updated = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

export class FailureRate {
  private readonly addresses = new BoundedCache<string, Bucket>(100_000);
  private readonly overall: Bucket;

  constructor(
    private readonly perAddress: Rate,
    private readonly all: Rate,
  ) {
    this.overall = { tokens: all.burst, updated: 0 };
  }

  /**
   * Seconds until `address` is back within its own rate, without counting anything; 0 while it is within.
   * A login from an address past it is refused before its JWT is looked at (routes/auth.ts).
   */
  floodingFor(address: string, now: number): number {
    const bucket = this.addresses.get(address);
    if (!bucket) return 0;
    const tokens = refilled(bucket, this.perAddress, now);
    return tokens >= 1 ? 0 : Math.ceil((1 - tokens) / this.perAddress.perSecond);
  }

  /** Counts one failure from `address`; true while within the rate, false for a flood. */
  admit(address: string, now: number): boolean {
    let bucket = this.addresses.get(address);
    if (!bucket) {
      bucket = { tokens: this.perAddress.burst, updated: now };
      this.addresses.set(address, bucket);
    }
    return take(bucket, this.perAddress, now) && take(this.overall, this.all, now);
  }
}
