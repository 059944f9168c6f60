/**
 * Turns a presented bearer value into a Principal.
 *
 * - argon2id runs at most once per token value per process: verified values are remembered in a bounded
 *   cache keyed by SHA-256 over a per-process random salt and the value, so the cache never holds a
 *   token. (It was HMAC-SHA256 under a per-process key: the same protection here — the salt, like that key,
 *   is in the same memory as the cache — at three times the cost, 1.6 against 0.47 µs a request.)
 *   Concurrent first uses of one value share a single verification.
 * - Every request still reads the token's record, so revocation and expiry apply on the very next request;
 *   a principal is made again when the roles in force changed (a runtime role edited or deleted, a login
 *   role deleted: PrincipalFactory), so a role's change applies as soon as this process has read it.
 * - A value of the token shape whose id is unknown, expired or revoked fails without argon2; so does a
 *   value of another shape unless the root token itself has another shape.
 * - Values that failed verification go to a separate bounded cache, so a flood of wrong tokens can
 *   neither repeat argon2 work for the same value nor evict verified ones.
 * - A token id has exactly one secret. Once a token's value has been verified, the process remembers the
 *   salted hash of that value under its id, and any other secret presented with that id is known to be
 *   wrong: 401 without argon2 (compared in constant time). So wrong secrets aimed at a token in use — the
 *   likely target, its id being in logs and lists — cost no argon2 at all. Not for the root token: its
 *   value may be chosen (at least 32 characters), so its wrong guesses keep argon2's cost and budget.
 * - Failures that cost no argon2 answer 401 and are never limited. Each argon2 verification is charged to
 *   the budget of its client address and token (FailureLimiter) when it starts, refunded on success; past
 *   the budget, that address gets 429 for that token only. The argon2 work itself is scheduled fairly
 *   between (address, token) pairs (Argon2Gate), so a client flooding one token cannot fill the queue that
 *   another client's first use of that token waits in.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { BoundedCache } from '../bounded-cache.js';
import { randomBytes } from '../crypto/random.js';
import { AppError } from '../errors.js';
import { statusOf, type TokenRecord } from '../model/tokens.js';
import type { TokenRecords } from '../store/token-records.js';
import { BoundedPolicy } from './access.js';
import type { Argon2Gate } from './argon2-gate.js';
import type { FailureLimiter } from './failure-limiter.js';
import { type Principal, type PrincipalFactory, ROOT_PRINCIPAL } from './principal.js';
import type { RootRecord } from './root-token.js';
import { parseToken } from './token-format.js';

export interface AuthenticatorDeps {
  readonly tokens: Pick<TokenRecords, 'get'>;
  readonly argon2: Pick<Argon2Gate, 'verify'>;
  readonly principals: PrincipalFactory;
  /** The root token record in use (it changes when another server sets a new root token). */
  readonly root: () => RootRecord;
  readonly now: () => number;
  readonly limiter?: FailureLimiter;
  readonly cacheSize?: number;
  /**
   * Reads the roles again (RoleAdmin.refresh): a token whose role or login role this process does not know
   * may have been given one another process made a moment ago.
   */
  readonly refreshPolicies?: () => Promise<unknown>;
}

/** How deep a chain of delegations may go before it is refused (a cycle, or records made by hand). */
const MAX_ANCESTORS = 64;

export const INVALID_TOKEN = 'the bearer token is invalid, expired or revoked';

export function unauthorized(detail = INVALID_TOKEN): AppError {
  return new AppError('unauthorized', detail, undefined, {
    'WWW-Authenticate': 'Bearer realm="coffer", error="invalid_token"',
  });
}

export class Authenticator {
  /** Prefixes every value hashed into a cache key: a fixed length, so no two values share a key. */
  private readonly salt = randomBytes(32).toString('hex');
  /** Verified values' principals, with the policy generation each was made under. */
  private verified: BoundedCache<string, { principal: Principal; generation: number }>;
  private rejected: BoundedCache<string, true>;
  /** Token id → the cache key (salted hash) of its one verified value. */
  private knownValue: BoundedCache<string, string>;
  private readonly inFlight = new Map<string, Promise<boolean>>();

  constructor(private readonly deps: AuthenticatorDeps) {
    this.verified = new BoundedCache(deps.cacheSize ?? 10_000);
    this.rejected = new BoundedCache(deps.cacheSize ?? 10_000);
    this.knownValue = new BoundedCache(deps.cacheSize ?? 10_000);
  }

  /** The principal for a bearer value presented from `address`; throws 401 (or 429 past the budget). */
  async authenticate(value: string, address = ''): Promise<Principal> {
    const cacheKey = hash('sha256', this.salt + value, 'base64');
    const known = this.verified.get(cacheKey);
    if (known) return known.principal.isRoot ? known.principal : this.ensureLive(known, cacheKey);
    return this.verify(value, cacheKey, address);
  }

  /**
   * The root token changed: every value verified or refused so far is verified again (the old root token
   * must stop working at once, and a value refused before may be the new one).
   */
  rootChanged(): void {
    const size = this.deps.cacheSize ?? 10_000;
    this.verified = new BoundedCache(size);
    this.rejected = new BoundedCache(size);
    this.knownValue = new BoundedCache(size);
  }

  /**
   * The principal of token `id` as it stands now, without its secret: for a web console session, whose
   * token was verified at sign-in. 401 when it is gone, revoked or expired, or its role is.
   */
  async principalForId(id: string): Promise<Principal> {
    const record = await this.deps.tokens.get(id);
    if (!record || statusOf(record, this.deps.now()) !== 'active') throw unauthorized();
    return this.principalOf(record);
  }

  /** The 401 for a request without a well-formed bearer token (never limited: it costs no argon2). */
  reject(detail: string): AppError {
    return unauthorized(detail);
  }

  private async verify(value: string, cacheKey: string, address: string): Promise<Principal> {
    if (this.rejected.get(cacheKey)) throw unauthorized();
    const root = this.deps.root();
    const parts = parseToken(value);
    if (parts && parts.id !== root.id) {
      if (this.isOtherThanKnown(parts.id, cacheKey)) throw unauthorized();
      const record = await this.deps.tokens.get(parts.id);
      if (!record || statusOf(record, this.deps.now()) !== 'active') throw unauthorized();
      if (!(await this.verifyOnce(cacheKey, record.hash, parts.secret, address, parts.id)))
        throw unauthorized();
      const { principals } = this.deps;
      const principal = await this.principalOf(record);
      this.verified.set(cacheKey, { principal, generation: principals.generation });
      this.knownValue.set(parts.id, cacheKey);
      return principal;
    }
    const rootCandidate = parts ? parts.id === root.id : root.id === null;
    if (!rootCandidate) throw unauthorized();
    if (!(await this.verifyOnce(cacheKey, root.hash, value, address, 'root'))) throw unauthorized();
    this.verified.set(cacheKey, { principal: ROOT_PRINCIPAL, generation: 0 });
    return ROOT_PRINCIPAL;
  }

  /**
   * The principal of a live record; 401 when its role or login role is gone (after reading them again). A
   * delegated token's is bounded by its ancestors' as they stand now (liveAncestors).
   */
  private async principalOf(record: TokenRecord): Promise<Principal> {
    const own = await this.ownPrincipalOf(record);
    const ancestors = await this.liveAncestors(record);
    if (ancestors.length === 0) return own;
    const privileges = new Set(
      [...own.privileges].filter((p) => ancestors.every((a) => a.privileges.has(p))),
    );
    return {
      ...own,
      access: new BoundedPolicy(
        own.access,
        ancestors.map((a) => a.access),
      ),
      privileges,
    };
  }

  private async ownPrincipalOf(record: TokenRecord): Promise<Principal> {
    const { principals, refreshPolicies } = this.deps;
    let principal = principals.forToken(record);
    if (!principal && refreshPolicies) {
      await refreshPolicies();
      principal = principals.forToken(record);
    }
    if (!principal) throw unauthorized();
    return principal;
  }

  /**
   * The principals of the tokens that created `record`, nearest first, read now: a delegated token is
   * usable only while every ancestor is — not revoked, not expired, its role and login role still there —
   * whatever the order in which a revocation and a creation met (401 otherwise). An ancestor's record gone
   * is an ancestor gone. The root token, which creates no parent link, ends the walk.
   */
  private async liveAncestors(record: TokenRecord): Promise<Principal[]> {
    const found: Principal[] = [];
    const seen = new Set([record.id]);
    for (let parent = record.parent; parent !== undefined; ) {
      if (seen.has(parent) || found.length >= MAX_ANCESTORS) throw unauthorized();
      seen.add(parent);
      const ancestor = await this.deps.tokens.get(parent);
      if (!ancestor || statusOf(ancestor, this.deps.now()) !== 'active') throw unauthorized();
      found.push(await this.ownPrincipalOf(ancestor));
      parent = ancestor.parent;
    }
    return found;
  }

  /** True when token `id`'s one value has been verified here and `cacheKey` is not its key. */
  private isOtherThanKnown(id: string, cacheKey: string): boolean {
    const known = this.knownValue.get(id);
    return known !== undefined && !timingSafeEqual(Buffer.from(known), Buffer.from(cacheKey));
  }

  private async ensureLive(
    known: { principal: Principal; generation: number },
    cacheKey: string,
  ): Promise<Principal> {
    const record = await this.deps.tokens.get(known.principal.id);
    if (!record || statusOf(record, this.deps.now()) !== 'active') throw unauthorized();
    const { principals } = this.deps;
    if (
      record.expiresAt === known.principal.expiresAt &&
      known.generation === principals.generation
    ) {
      // Its ancestors are read at every use too: one revoked a moment ago takes this token with it.
      if (record.parent !== undefined) await this.liveAncestors(record);
      return known.principal;
    }
    // Renewed (here or by another process), or its role changed: made again from the record.
    const principal = await this.principalOf(record);
    this.verified.set(cacheKey, { principal, generation: principals.generation });
    return principal;
  }

  /**
   * One argon2 verification per value at a time; later callers join it. Starting one is what the budget
   * of (`address`, `tokenId`) pays for: checked and charged at the start, refunded on success.
   */
  private verifyOnce(
    cacheKey: string,
    hash: string,
    secret: string,
    address: string,
    tokenId: string,
  ): Promise<boolean> {
    const pending = this.inFlight.get(cacheKey);
    if (pending) return pending;
    const { limiter, now } = this.deps;
    const wait = limiter?.retryAfter(address, tokenId, now()) ?? 0;
    if (wait > 0) {
      return Promise.reject(
        new AppError(
          'too_many_requests',
          'too many wrong secrets for this token from this address; retry later',
          undefined,
          { 'Retry-After': String(wait) },
        ),
      );
    }
    limiter?.charge(address, tokenId, now());
    // Turns per client and token: a flood at one token from one address waits behind itself.
    const verification = this.deps.argon2
      .verify(hash, secret, `${address}\u0000${tokenId}`)
      .then((ok) => {
        if (ok) limiter?.refund(address, tokenId, now());
        else this.rejected.set(cacheKey, true);
        return ok;
      });
    verification.finally(() => this.inFlight.delete(cacheKey)).catch(() => undefined);
    this.inFlight.set(cacheKey, verification);
    return verification;
  }
}
