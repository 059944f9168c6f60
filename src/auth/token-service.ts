/**
 * Token management: create and revoke (root only), list (root and auditor: metadata only), and describing
 * the caller (`/auth/me`). A create and a revocation that changed something are operator events
 * (`token.create`, `token.revoke`), recorded here.
 * The request body has already passed its JSON schema (http/schemas.ts); this checks what a schema
 * cannot: role names, namespace patterns, the TTL bounds from the configuration.
 */

import { type FieldIssue, invalid, notFound } from '../errors.js';
import type { OperatorEvents } from '../model/operator-events.js';
import {
  statusOf,
  type TokenMetadata,
  type TokenRecord,
  type TokenStatus,
} from '../model/tokens.js';
import type { RecordWrite } from '../store/kv-records.js';
import type { TokenRecords } from '../store/token-records.js';
import type { Capability, Scope } from './access.js';
import type { Argon2Gate } from './argon2-gate.js';
import { unauthorized } from './authenticator.js';
import { parsePattern } from './patterns.js';
import {
  type Principal,
  type PrincipalFactory,
  ROOT_PRINCIPAL,
  requirePrivilege,
} from './principal.js';
import { PRIVILEGES, type Privilege, ROOT_ROLE } from './roles.js';
import type { RootRecord } from './root-token.js';
import { generateToken, isTokenId, parseToken } from './token-format.js';

export interface CreateTokenInput {
  readonly role?: string;
  readonly scopes?: readonly { namespace: string; read?: boolean; write?: boolean }[];
  readonly expires_in?: number;
  readonly metadata?: TokenMetadata;
}

export interface TokenView {
  readonly id: string;
  readonly role: string | null;
  readonly scopes: readonly Scope[] | null;
  readonly metadata: TokenMetadata;
  readonly created_at: string;
  readonly expires_at: string;
  readonly status?: TokenStatus;
}

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
}

const iso = (ms: number): string => new Date(ms).toISOString();

function view(record: TokenRecord): TokenView {
  return {
    id: record.id,
    role: record.role,
    scopes: record.scopes,
    metadata: record.metadata,
    created_at: iso(record.createdAt),
    expires_at: iso(record.expiresAt),
  };
}

/** The audit intent of a token change, given the token's id; its writes are committed with the change. */
export type BeforeTokenCommit = (id: string) => Promise<readonly RecordWrite[]>;

export class TokenService {
  constructor(private readonly deps: TokenServiceDeps) {}

  /**
   * Creates a token; `beforeCommit` (the audit intent) runs once its id is known, before it is stored, and
   * what it returns is committed with the token.
   */
  async create(
    caller: Principal,
    input: CreateTokenInput,
    beforeCommit?: BeforeTokenCommit,
  ): Promise<TokenView & { token: string; expires_in: number }> {
    requirePrivilege(caller, 'manage_tokens');
    const grant = this.checkGrant(input);
    const expiresIn = input.expires_in ?? this.deps.defaultTtl;
    if (expiresIn > this.deps.maxTtl) {
      throw invalid('expires_in is too large', [
        { field: '/expires_in', in: 'body', message: `must be at most ${this.deps.maxTtl}` },
      ]);
    }
    for (;;) {
      const token = generateToken();
      const now = this.deps.now();
      const record: TokenRecord = {
        id: token.id,
        hash: await this.deps.argon2.hash(token.secret),
        ...grant,
        metadata: input.metadata ?? {},
        createdAt: now,
        expiresAt: now + expiresIn * 1000,
        revokedAt: null,
        ttl: expiresIn,
      };
      // A clash of random 16-character ids is astronomically unlikely; if it happens, draw again.
      if (token.id === this.deps.root().id) continue;
      const alongside = (await beforeCommit?.(token.id)) ?? [];
      if (await this.deps.store.create(record, alongside)) {
        const created = view(record);
        await this.deps.events.record(
          'token.create',
          {
            by: caller.id,
            token_id: created.id,
            role: created.role,
            scopes: created.scopes,
            expires_at: created.expires_at,
          },
          'token created',
        );
        return { token: token.value, ...created, expires_in: expiresIn };
      }
    }
  }

  async list(caller: Principal, all: boolean): Promise<TokenView[]> {
    requirePrivilege(caller, 'list_tokens');
    const now = this.deps.now();
    const records = await this.deps.store.list();
    return records
      .map((record) => ({ ...view(record), status: statusOf(record, now) }))
      .filter((token) => all || token.status === 'active')
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
    requirePrivilege(caller, 'manage_tokens');
    const id = isTokenId(tokenOrId) ? tokenOrId : parseToken(tokenOrId)?.id;
    // `root` is the id /v1/auth/me reports for the root token.
    if (tokenOrId === ROOT_PRINCIPAL.id || (id !== undefined && id === this.deps.root().id)) {
      throw invalid(
        'the root token cannot be revoked; set COFFER_ROOT_TOKEN and restart to replace it',
      );
    }
    const current = id === undefined ? undefined : await this.deps.store.read(id);
    if (id === undefined || !current) throw notFound('no such token');
    if (current.revokedAt !== null) {
      await this.deps.store.anchor(current); // a revocation a crash left unanchored
      return { id, changed: false };
    }
    const alongside = (await beforeCommit?.(id)) ?? [];
    const outcome = await this.deps.store.revoke(id, this.deps.now(), alongside);
    if (outcome === 'missing') throw notFound('no such token');
    // Revoking a revoked token again answers the same, and changes and records nothing.
    if (outcome === 'revoked') {
      await this.deps.events.record(
        'token.revoke',
        { by: caller.id, token_id: id },
        'token revoked',
      );
    }
    return { id, changed: outcome === 'revoked' };
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
    const alongside = (await beforeCommit?.(caller.id)) ?? [];
    const outcome = await this.deps.store.revoke(caller.id, this.deps.now(), alongside);
    if (outcome === 'missing') throw notFound('no such token');
    if (outcome === 'revoked')
      await this.deps.events.record(
        'token.revoke',
        { by: caller.id, token_id: caller.id },
        'token revoked by itself',
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

  private checkGrant(input: CreateTokenInput): { role: string | null; scopes: Scope[] | null } {
    if ((input.role === undefined) === (input.scopes === undefined)) {
      throw invalid('exactly one of role and scopes is required', [
        { field: '', in: 'body', message: 'give either role or scopes' },
      ]);
    }
    if (input.role !== undefined) {
      if (input.role === ROOT_ROLE || !this.deps.principals.hasRole(input.role)) {
        throw invalid(`unknown role "${input.role}"`, [
          { field: '/role', in: 'body', message: 'must name a role that can be given to a token' },
        ]);
      }
      return { role: input.role, scopes: null };
    }
    const issues: FieldIssue[] = [];
    const scopes = input.scopes!.map((s, i) => {
      if (!parsePattern(s.namespace)) {
        issues.push({
          field: `/scopes/${i}/namespace`,
          in: 'body',
          message: 'must be *, a namespace, or a namespace followed by /*',
        });
      }
      const scope = { namespace: s.namespace, read: s.read ?? false, write: s.write ?? false };
      if (!scope.read && !scope.write)
        issues.push({
          field: `/scopes/${i}`,
          in: 'body',
          message: 'must grant read, write or both',
        });
      return scope;
    });
    if (issues.length > 0) throw invalid('invalid scopes', issues);
    return { role: null, scopes };
  }
}
