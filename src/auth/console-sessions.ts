/**
 * Web console sessions: the browser holds a random session id in an HttpOnly cookie, never the token; the
 * session's record (store/console-session-records.ts, keyed by the id's SHA-256) says which token it acts as.
 * - Signing in takes a token (pasted, or the one an OIDC sign-in bought), verified as any bearer token is
 *   (argon2 once, the failure budget of its address); the session then acts as that token, read again on
 *   every request, so the token's revocation, expiry or role change applies to the session at once.
 * - It ends after `idleMs` without use, `maxLifetimeMs` after sign-in, when its token ends, at sign-out
 *   (the record deleted: every worker and server refuses it from then on), and for the root token when
 *   another root token is set.
 * - Each session has a CSRF token of its own: a state-changing call must carry it (X-Coffer-CSRF),
 *   compared in constant time, beside the SameSite=Strict cookie.
 * - Use is written back at most once per tenth of the idle timeout, so a busy page costs few writes.
 */
import { createHash } from 'node:crypto';
import { sameText } from '../crypto/constant-time.js';
import { randomBytes } from '../crypto/random.js';
import type { RootRecord } from '../model/tokens.js';
import type {
  ConsoleSessionRecord,
  ConsoleSessionRecords,
} from '../store/console-session-records.js';
import { type Authenticator, unauthorized } from './authenticator.js';
import { type Principal, ROOT_PRINCIPAL } from './principal.js';

export interface ConsoleSessionsDeps {
  readonly records: Pick<ConsoleSessionRecords, 'get' | 'put' | 'delete' | 'purge'>;
  readonly authenticator: Pick<Authenticator, 'authenticate' | 'principalForId'>;
  readonly root: () => RootRecord;
  readonly idleMs: number;
  readonly maxLifetimeMs: number;
  readonly now: () => number;
}

/** A session in use: who it acts as, and its record. */
export interface ConsoleSession {
  readonly principal: Principal;
  readonly record: ConsoleSessionRecord;
}

const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export const SESSION_ENDED = 'the console session has ended: sign in again';

const hashOf = (sessionId: string): string => createHash('sha256').update(sessionId).digest('hex');

const rootTag = (root: RootRecord): string =>
  createHash('sha256').update(root.hash).digest('base64url').slice(0, 22);

export class ConsoleSessions {
  constructor(private readonly deps: ConsoleSessionsDeps) {}

  /** A new session acting as the token `value` (verified here); its id goes in the cookie only. */
  async signIn(
    value: string,
    address: string,
    via: ConsoleSessionRecord['via'],
  ): Promise<ConsoleSession & { readonly sessionId: string }> {
    return this.open(await this.deps.authenticator.authenticate(value, address), via);
  }

  /**
   * A new session acting as token `id`, which this server has just made (an OIDC sign-in's): its secret
   * needs no second verification.
   */
  async signInAs(
    id: string,
    via: ConsoleSessionRecord['via'],
    /** The session's key (CSRF token) the page made and holds already (an OIDC sign-in's). */
    csrf?: string,
  ): Promise<ConsoleSession & { readonly sessionId: string }> {
    return this.open(await this.deps.authenticator.principalForId(id), via, csrf);
  }

  private async open(
    principal: Principal,
    via: ConsoleSessionRecord['via'],
    csrf = randomBytes(32).toString('base64url'),
  ): Promise<ConsoleSession & { readonly sessionId: string }> {
    const { now, maxLifetimeMs, records, root } = this.deps;
    const sessionId = randomBytes(32).toString('base64url');
    const at = now();
    const record: ConsoleSessionRecord = {
      token_id: principal.id,
      ...(principal.isRoot ? { root_tag: rootTag(root()) } : {}),
      csrf,
      via,
      created_at: at,
      last_seen_at: at,
      expires_at: Math.min(at + maxLifetimeMs, principal.expiresAt ?? Number.POSITIVE_INFINITY),
    };
    await records.put(hashOf(sessionId), record);
    return { sessionId, principal, record };
  }

  /**
   * The session a cookie names, while it lasts; 401 once it has ended. Counts as a use of it unless `touch`
   * is false: asking whether a session lives does not hold it from its idle timeout.
   */
  async resolve(sessionId: string, { touch = true } = {}): Promise<ConsoleSession> {
    if (!SESSION_ID.test(sessionId)) throw unauthorized(SESSION_ENDED);
    const { records, now, idleMs } = this.deps;
    const idHash = hashOf(sessionId);
    const record = await records.get(idHash);
    if (!record) throw unauthorized(SESSION_ENDED);
    const at = now();
    if (at >= record.expires_at || at - record.last_seen_at >= idleMs) {
      await records.delete(idHash);
      throw unauthorized(SESSION_ENDED);
    }
    const principal = await this.principalOf(record);
    if (touch && at - record.last_seen_at >= idleMs / 10) {
      const seen = { ...record, last_seen_at: at };
      await records.put(idHash, seen);
      return { principal, record: seen };
    }
    return { principal, record };
  }

  /** Ends the session everywhere; its record (for an OIDC sign-in's token to revoke), or undefined. */
  async signOut(sessionId: string): Promise<ConsoleSessionRecord | undefined> {
    if (!SESSION_ID.test(sessionId)) return undefined;
    const idHash = hashOf(sessionId);
    const record = await this.deps.records.get(idHash);
    await this.deps.records.delete(idHash);
    return record;
  }

  /**
   * Deletes every session that has ended (unused for the idle timeout, or past its lifetime) and returns
   * how many: a session nobody uses again is otherwise only deleted when its cookie comes back.
   */
  purgeEnded(): Promise<number> {
    const { records, now, idleMs } = this.deps;
    const at = now();
    return records.purge((r) => at >= r.expires_at || at - r.last_seen_at >= idleMs);
  }

  /** Whether `presented` is the session's CSRF token (constant time). */
  static csrfMatches(record: ConsoleSessionRecord, presented: string | undefined): boolean {
    return presented !== undefined && sameText(record.csrf, presented);
  }

  private async principalOf(record: ConsoleSessionRecord): Promise<Principal> {
    if (record.token_id !== 'root') return this.deps.authenticator.principalForId(record.token_id);
    // Another root token set since sign-in ends a root session, as it ends the old token.
    const tag = rootTag(this.deps.root());
    if (record.root_tag === undefined || record.root_tag !== tag) throw unauthorized(SESSION_ENDED);
    return ROOT_PRINCIPAL;
  }
}
