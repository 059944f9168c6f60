/**
 * Issuers' signing keys (JWKS), fetched over HTTPS (plain HTTP on loopback only: login-roles.ts) and kept:
 * - a set is fetched when first needed, and again in the background of a login once it is older than
 *   `refreshMs`;
 * - a JWT whose `kid` the set does not hold fetches the set again at once — the issuer rotated its keys —
 *   but at most once per `minRefreshMs` per set, so a flood of made-up `kid`s costs the issuer one request
 *   per interval;
 * - while the issuer cannot be reached, the last good set is used for at most `maxStaleMs` after it was
 *   fetched; after that, logins against it are refused until it answers.
 * With `discovery`, the set's address comes from `{issuer}/.well-known/openid-configuration` (its `issuer`
 * must be the login role's, exactly), fetched and kept the same way.
 * Answers are bounded (`maxBytes`) and time-limited (`timeoutMs`); redirects are not followed (issuer-http.ts).
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { fetchJson, isKeyAddress } from './issuer-http.js';

export interface KeySetOptions {
  readonly refreshMs: number;
  readonly minRefreshMs: number;
  readonly maxStaleMs: number;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly now: () => number;
}

/** Why keys could not be had: said in the audit entry of the refused login. */
export class KeysUnavailable extends Error {
  constructor(
    readonly reason: 'issuer_unreachable' | 'unknown_kid',
    message: string,
  ) {
    super(message);
  }
}

interface Held {
  keys: JWTVerifyGetKey | undefined;
  fetchedAt: number;
  /** When a fetch last started (success or not): the unknown-kid refresh waits minRefreshMs after it. */
  triedAt: number;
  fetching: Promise<void> | undefined;
  lastError: string | undefined;
}

function isKeySet(value: unknown): value is JSONWebKeySet {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { keys?: unknown }).keys) &&
    (value as { keys: unknown[] }).keys.every((k) => typeof k === 'object' && k !== null)
  );
}

export class KeySets {
  private readonly held = new Map<string, Held>();

  constructor(private readonly options: KeySetOptions) {}

  /**
   * The key chooser for a JWT from this source, for jose's jwtVerify: throws KeysUnavailable when the set
   * cannot be had, or holds no key for the JWT after the one refresh it may make.
   */
  keysFor(source: { readonly jwksUrl: string } | { readonly issuer: string }, ca?: string) {
    const id = 'jwksUrl' in source ? `jwks ${source.jwksUrl}` : `discovery ${source.issuer}`;
    const name = ca === undefined ? id : `${id} ${ca}`;
    return async (...args: Parameters<JWTVerifyGetKey>) => {
      const held = await this.fresh(name, source, ca);
      try {
        return await held.keys!(...args);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw err;
      }
      // Not in the set: the issuer may have rotated. One refresh per interval per set.
      const { now, minRefreshMs } = this.options;
      if (now() - held.triedAt < minRefreshMs)
        throw new KeysUnavailable('unknown_kid', 'no key in the issuer set matches the JWT');
      await this.fetch(source, ca, held).catch(() => undefined);
      try {
        return await held.keys!(...args);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw err;
        throw new KeysUnavailable('unknown_kid', 'no key in the issuer set matches the JWT');
      }
    };
  }

  private async fresh(
    name: string,
    source: { readonly jwksUrl: string } | { readonly issuer: string },
    ca: string | undefined,
  ): Promise<Held> {
    const { now, refreshMs, maxStaleMs } = this.options;
    let held = this.held.get(name);
    if (!held) {
      held = {
        keys: undefined,
        fetchedAt: 0,
        triedAt: 0,
        fetching: undefined,
        lastError: undefined,
      };
      if (this.held.size >= 1000) this.held.delete(this.held.keys().next().value!);
      this.held.set(name, held);
    }
    const age = now() - held.fetchedAt;
    if (held.keys === undefined || age >= maxStaleMs) {
      // Nothing usable: wait for the issuer (one fetch shared by every login waiting for it, and no
      // more than one per interval: logins while it is down do not become a flood of fetches).
      if (held.fetching || now() - held.triedAt >= this.options.minRefreshMs)
        await this.fetch(source, ca, held).catch(() => undefined);
      if (held.keys === undefined || now() - held.fetchedAt >= maxStaleMs)
        throw new KeysUnavailable(
          'issuer_unreachable',
          `the issuer's keys cannot be fetched: ${held.lastError ?? 'unknown error'}`,
        );
    } else if (age >= refreshMs && now() - held.triedAt >= this.options.minRefreshMs) {
      // Usable but due: refreshed in the background, the login goes on with the set it has.
      this.fetch(source, ca, held).catch(() => undefined);
    }
    return held;
  }

  private fetch(
    source: { readonly jwksUrl: string } | { readonly issuer: string },
    ca: string | undefined,
    held: Held,
  ): Promise<void> {
    if (held.fetching) return held.fetching;
    held.triedAt = this.options.now();
    held.fetching = this.load(source, ca)
      .then(
        (set) => {
          held.keys = createLocalJWKSet(set);
          held.fetchedAt = this.options.now();
          held.lastError = undefined;
        },
        (err: unknown) => {
          held.lastError = (err as Error).message;
          throw err;
        },
      )
      .finally(() => {
        held.fetching = undefined;
      });
    return held.fetching;
  }

  private async load(
    source: { readonly jwksUrl: string } | { readonly issuer: string },
    ca: string | undefined,
  ): Promise<JSONWebKeySet> {
    const bounds = {
      timeoutMs: this.options.timeoutMs,
      maxBytes: this.options.maxBytes,
      ...(ca === undefined ? {} : { ca }),
    };
    let url: string;
    if ('jwksUrl' in source) url = source.jwksUrl;
    else {
      const config = await fetchJson(
        `${source.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
        bounds,
      );
      const { issuer, jwks_uri: jwksUri } = (config ?? {}) as Record<string, unknown>;
      if (issuer !== source.issuer) throw new Error('the discovery document names another issuer');
      if (typeof jwksUri !== 'string' || !isKeyAddress(jwksUri))
        throw new Error('the discovery document has no jwks_uri that may be used (HTTPS)');
      url = jwksUri;
    }
    const set = await fetchJson(url, bounds);
    if (!isKeySet(set)) throw new Error(`${new URL(url).origin} did not answer a JWK set`);
    return set;
  }
}
