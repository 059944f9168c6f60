/**
 * Token management: create and revoke (root: any token; a token with create_tokens: tokens with at most its
 * own rights, its children, revoked with it), list (root and auditor: every token; a creator: its
 * descendants), issue for a login (auth/jwt-login.ts), renew and revoke itself, and describing the caller
 * (`/auth/me`). A create and a revocation that changed something are operator events (`token.create`,
 * `token.revoke`), recorded here.
 * The request body has already passed its JSON schema (api/schemas.ts); this checks what a schema
 * cannot: role names, namespace patterns, metadata bounds, the TTL bounds from the configuration.
 */

import { forbidden, invalid, notFound } from '../errors.js';
import type { OperatorEvents } from '../model/operator-events.js';
import { PRIVILEGES, type Privilege } from '../model/policies.js';
import type { TokenLogin, TokenMetadata, TokenRecord } from '../model/tokens.js';
import type { RecordWrite } from '../store/kv-records.js';
import type { TokenRecords } from '../store/token-records.js';
import { type Capability, policyFromScopes, type Scope } from './access.js';
import type { Argon2Gate } from './argon2-gate.js';
import { unauthorized } from './authenticator.js';
import {
  type Principal,
  type PrincipalFactory,
  ROOT_PRINCIPAL,
  requirePrivilege,
} from './principal.js';
import type { RootRecord } from './root-token.js';
import { descendantsOf, listedStatus } from './token-family.js';
import { generateToken, isTokenId, parseToken } from './token-format.js';
import { type CreateTokenInput, checkGrant, checkMetadata } from './token-request.js';

export type { CreateTokenInput } from './token-request.js';

import { iso, type TokenView, view } from './token-view.js';

export type { TokenView } from './token-view.js';

export interface TokenServiceDeps {
  readonly store: TokenRecords;
  readonly argon2: Pick<Argon2Gate, 'hash'>;
  readonly principals: PrincipalFactory;
  /** The root token record in use. */
  readonly root: () => RootRecord;
  readonly defaultTtl: number;
  readonly maxTtl: number;
  readonly now: () => number;
  readonly events: OperatorEvents;
  /** Reads the roles again: a role another process made a moment ago may not be known here yet. */
  readonly refreshPolicies?: () => Promise<unknown>;
}

/**
 * The audit intent of a token change, given the token's id (and, for a revocation, the tokens revoked with
 * it); its writes are committed with the change.
 */
export type BeforeTokenCommit = (
  id: string,
  alsoRevoked?: readonly string[],
) => Promise<readonly RecordWrite[]>;

export class TokenService {
  constructor(private readonly deps: TokenServiceDeps) {}

  /**
   * Creates a token; `beforeCommit` (the audit intent) runs once its id is known, before it is stored, and
   * what it returns is committed with the token. Root (manage_tokens) may give any role or scopes; a token
   * with create_tokens only what it holds itself (rights, privileges, and an expiry no later than its own),
   * and the new token is its child.
   */
  async create(
    caller: Principal,
    input: CreateTokenInput,
    beforeCommit?: BeforeTokenCommit,
  ): Promise<TokenView & { token: string; expires_in: number }> {
    const delegated = !caller.privileges.has('manage_tokens');
    if (delegated) requirePrivilege(caller, 'create_tokens');
    if (input.role !== undefined && !this.deps.principals.hasRole(input.role))
      await this.deps.refreshPolicies?.();
    const grant = checkGrant(input, this.deps.principals);
    const metadata = checkMetadata(input.metadata ?? {});
    const now = this.deps.now();
    const callerExpiry = caller.expiresAt ?? Number.POSITIVE_INFINITY;
    // A delegated token's default lifetime is cut to what the creating token has left.
    const expiresIn =
      input.expires_in ??
      (delegated
        ? Math.max(1, Math.min(this.deps.defaultTtl, Math.floor((callerExpiry - now) / 1000)))
        : this.deps.defaultTtl);
    if (expiresIn > this.deps.maxTtl) {
      throw invalid('expires_in is too large', [
        { field: '/expires_in', in: 'body', message: `must be at most ${this.deps.maxTtl}` },
      ]);
    }
    if (!delegated)
      return this.issue(caller.id, { ...grant, metadata, ttl: expiresIn }, now, beforeCommit);
    this.checkWithinCaller(caller, grant);
    if (now + expiresIn * 1000 > callerExpiry) {
      const left = Math.max(0, Math.floor((callerExpiry - now) / 1000));
      throw invalid('expires_in is past the expiry of the token creating it', [
        { field: '/expires_in', in: 'body', message: `must be at most ${left}` },
      ]);
    }
    return this.issue(
      caller.id,
      { ...grant, metadata, ttl: expiresIn, parent: caller.id, expiryCap: callerExpiry },
      now,
      beforeCommit,
    );
  }

  /**
   * Stores a new token for what a login granted (auth/jwt-login.ts): `by` is the login's description for
   * the event. The grant has been checked by the login role's own checks.
   */
  issueForLogin(
    grant: {
      readonly role: string | null;
      readonly scopes: readonly Scope[] | null;
      readonly metadata: TokenMetadata;
      readonly ttl: number;
      readonly maxTtl: number;
      readonly login: TokenLogin;
    },
    beforeCommit?: BeforeTokenCommit,
  ): Promise<TokenView & { token: string; expires_in: number }> {
    const now = this.deps.now();
    const ttl = Math.min(grant.ttl, this.deps.maxTtl);
    return this.issue(
      `login:${grant.login.role}`,
      {
        role: grant.role,
        scopes: grant.scopes,
        metadata: grant.metadata,
        ttl,
        login: grant.login,
        expiryCap: now + Math.min(grant.maxTtl, this.deps.maxTtl) * 1000,
      },
      now,
      beforeCommit,
    );
  }

  private async issue(
    by: string,
    shape: Pick<TokenRecord, 'role' | 'scopes' | 'metadata' | 'parent' | 'login' | 'expiryCap'> & {
      readonly ttl: number;
    },
    now: number,
    beforeCommit?: BeforeTokenCommit,
  ): Promise<TokenView & { token: string; expires_in: number }> {
    for (;;) {
      const token = generateToken();
      // A clash of random 16-character ids is astronomically unlikely; if it happens, draw again.
      if (token.id === this.deps.root().id) continue;
      const roleId = shape.role === null ? undefined : this.deps.principals.roleId(shape.role);
      const record: TokenRecord = {
        id: token.id,
        hash: await this.deps.argon2.hash(token.secret),
        role: shape.role,
        ...(roleId === undefined ? {} : { roleId }),
        scopes: shape.scopes,
        metadata: shape.metadata,
        createdAt: now,
        expiresAt: now + shape.ttl * 1000,
        revokedAt: null,
        ttl: shape.ttl,
        ...(shape.parent === undefined ? {} : { parent: shape.parent }),
        ...(shape.login === undefined ? {} : { login: shape.login }),
        ...(shape.expiryCap === undefined ? {} : { expiryCap: shape.expiryCap }),
      };
      const alongside = (await beforeCommit?.(token.id)) ?? [];
      const outcome = await this.deps.store.create(record, alongside, this.deps.now());
      if (outcome === 'taken') continue;
      // The creating token was revoked (or expired) while this one was being made.
      if (outcome === 'parent-gone') throw unauthorized();
      const created = view(record);
      await this.deps.events.record(
        'token.create',
        {
          by,
          token_id: created.id,
          role: created.role,
          scopes: created.scopes,
          expires_at: created.expires_at,
          ...(record.parent === undefined ? {} : { parent: record.parent }),
          ...(record.login === undefined
            ? {}
            : {
                login_role: record.login.role,
                issuer: record.login.issuer,
                subject: record.login.subject,
              }),
        },
        'token created',
      );
      return { token: token.value, ...created, expires_in: shape.ttl };
    }
  }

  /** A delegated grant must lie within the caller's own rights and privileges. */
  private checkWithinCaller(
    caller: Principal,
    grant: { role: string | null; scopes: Scope[] | null },
  ): void {
    const given = grant.role !== null ? this.deps.principals.roleGrant(grant.role) : undefined;
    const policy = given?.policy ?? policyFromScopes(grant.scopes ?? []);
    const privileges = given?.privileges ?? new Set<Privilege>();
    const field = grant.role !== null ? '/role' : '/scopes';
    if (!caller.access.covers(policy) || [...privileges].some((p) => !caller.privileges.has(p)))
      throw forbidden(
        `give a token more than the creating token holds (${field.slice(1)} must lie within its own rights)`,
      );
  }

  /** Every token for list_tokens; for a token with create_tokens only, the tokens it created and theirs. */
  async list(caller: Principal, all: boolean): Promise<TokenView[]> {
    const everyToken = caller.privileges.has('list_tokens');
    if (!everyToken) requirePrivilege(caller, 'create_tokens');
    const now = this.deps.now();
    let records = await this.deps.store.list();
    // Every record, for the ancestors of those listed.
    const byId = new Map(records.map((r) => [r.id, r]));
    if (!everyToken) {
      const mine = new Set(descendantsOf(caller.id, records));
      records = records.filter((r) => mine.has(r.id));
    }
    const statusOf = (record: TokenRecord) => listedStatus(record, byId, now, this.deps.principals);
    return records
      .map((record) => ({ ...view(record), status: statusOf(record) }))
      .filter((token) => all || token.status === 'active' || token.status === 'role_deleted')
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /**
   * Revokes by token value or id, and returns the id and whether this call revoked it. Unknown → 404;
   * already revoked → done, nothing changed. `beforeCommit` (the audit intent) runs before the change, and
   * what it returns is committed with it.
   */
  async revoke(
    caller: Principal,
    tokenOrId: string,
    beforeCommit?: BeforeTokenCommit,
  ): Promise<{ id: string; changed: boolean }> {
    const delegated = !caller.privileges.has('manage_tokens');
    if (delegated) requirePrivilege(caller, 'create_tokens');
    const id = isTokenId(tokenOrId) ? tokenOrId : parseToken(tokenOrId)?.id;
    // `root` is the id /v1/auth/me reports for the root token.
    if (tokenOrId === ROOT_PRINCIPAL.id || (id !== undefined && id === this.deps.root().id)) {
      throw invalid(
        'the root token cannot be revoked; set COFFER_ROOT_TOKEN and restart to replace it',
      );
    }
    const current = id === undefined ? undefined : await this.deps.store.read(id);
    if (id === undefined || !current) throw notFound('no such token');
    const records = await this.deps.store.list();
    const below = descendantsOf(id, records);
    if (delegated && !descendantsOf(caller.id, records).includes(id))
      throw forbidden('revoke a token it did not create (nor a token it created did)');
    if (current.revokedAt !== null) {
      await this.deps.store.anchor(current); // a revocation a crash left unanchored
      // Revoked again: any descendant still live (one a creation raced in) goes now.
      const live = new Set(records.filter((r) => r.revokedAt === null).map((r) => r.id));
      if (!below.some((child) => live.has(child))) return { id, changed: false };
    }
    return {
      id,
      changed: await this.revokeWithDescendants(caller.id, id, below, records, beforeCommit),
    };
  }

  /**
   * Revokes `id` and the live tokens below it in one transaction, and records each; false when `id` was
   * revoked already (nothing then changes).
   */
  private async revokeWithDescendants(
    by: string,
    id: string,
    below: readonly string[],
    records: readonly TokenRecord[],
    beforeCommit?: BeforeTokenCommit,
  ): Promise<boolean> {
    const now = this.deps.now();
    const live = new Set(records.filter((r) => r.revokedAt === null).map((r) => r.id));
    const alsoRevoked = below.filter((child) => live.has(child));
    const alongside = (await beforeCommit?.(id, alsoRevoked)) ?? [];
    const { outcome, revoked } = await this.deps.store.revoke(id, now, alongside, alsoRevoked, by);
    if (outcome === 'missing') throw notFound('no such token');
    if (outcome === 'revoked')
      await this.deps.events.record('token.revoke', { by, token_id: id }, 'token revoked');
    await this.recordWithParent(by, id, revoked);
    // A token created from `id` while this revocation was being made (its creation saw `id` live, and
    // committed before this did) was not in the list above: swept now. (Used, it is refused anyway: a
    // delegated token is checked against its ancestors at every use.)
    const listed = new Set(below);
    const late = descendantsOf(id, await this.deps.store.list()).filter(
      (child) => !listed.has(child),
    );
    if (late.length > 0) {
      const swept = await this.deps.store.revoke(id, this.deps.now(), [], late, by);
      await this.recordWithParent(by, id, swept.revoked);
    }
    // Revoking a revoked token again answers the same, and changes and records nothing (unless it
    // found a descendant left live).
    return outcome === 'revoked' || revoked.length > 0;
  }

  /** Records the revocation of each of `ids`, revoked with token `parent`. */
  private async recordWithParent(
    by: string,
    parent: string,
    ids: readonly string[],
  ): Promise<void> {
    for (const child of ids)
      if (child !== parent)
        await this.deps.events.record(
          'token.revoke',
          { by, token_id: child, with_parent: parent },
          'token revoked with the token that created it',
        );
  }

  /**
   * The caller renews its own token: its expiry moves to now + the lifetime it was created with, but never
   * past its creation + the server's max_ttl (a renewal there changes nothing). The root token does not
   * expire (400).
   */
  async renewSelf(caller: Principal): Promise<TokenView> {
    if (caller.isRoot) throw invalid('the root token does not expire: there is nothing to renew');
    const now = this.deps.now();
    const renewed = await this.deps.store.renew(caller.id, now, (current) =>
      Math.min(
        now + (current.ttl ?? (current.expiresAt - current.createdAt) / 1000) * 1000,
        current.createdAt + this.deps.maxTtl * 1000,
        current.expiryCap ?? Number.POSITIVE_INFINITY,
      ),
    );
    // Revoked or expired since it was checked a moment ago: refused as the token would be now.
    if (renewed.outcome !== 'renewed') throw unauthorized();
    const view_ = view(renewed.record);
    if (renewed.record.expiresAt !== caller.expiresAt)
      await this.deps.events.record(
        'token.renew',
        { by: caller.id, token_id: caller.id, expires_at: view_.expires_at },
        'token renewed',
      );
    return view_;
  }

  /**
   * The caller revokes its own token (any token may: one that has leaked, or that a program is done with).
   * The root token cannot be revoked (400): it is replaced with COFFER_ROOT_TOKEN.
   */
  async revokeSelf(caller: Principal, beforeCommit?: BeforeTokenCommit): Promise<void> {
    if (caller.isRoot)
      throw invalid(
        'the root token cannot be revoked; set COFFER_ROOT_TOKEN and restart to replace it',
      );
    const records = await this.deps.store.list();
    if (!records.some((r) => r.id === caller.id)) throw notFound('no such token');
    await this.revokeWithDescendants(
      caller.id,
      caller.id,
      descendantsOf(caller.id, records),
      records,
      beforeCommit,
    );
  }

  describe(caller: Principal): {
    id: string;
    is_root: boolean;
    role: string | null;
    scopes: readonly Scope[] | null;
    metadata: TokenMetadata;
    expires_at: string | null;
    capabilities: Capability[];
    privileges: Privilege[];
  } {
    const capabilities = caller.access.capabilities();
    if (caller.isRoot)
      capabilities[0] = {
        ...capabilities[0]!,
        actions: [...capabilities[0]!.actions, 'manage_tokens'],
      };
    return {
      id: caller.id,
      is_root: caller.isRoot,
      role: caller.role,
      scopes: caller.scopes,
      metadata: caller.metadata,
      expires_at: caller.expiresAt === null ? null : iso(caller.expiresAt),
      capabilities,
      privileges: PRIVILEGES.filter((p) => caller.privileges.has(p)),
    };
  }
}
