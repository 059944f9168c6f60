/**
 * Roles and login roles as Coffer keeps them: the built-in roles are code (auth/roles.ts), custom roles come
 * from the configuration file or are managed at runtime (PUT /v1/sys/roles/{name}), and login roles
 * (PUT /v1/sys/login-roles/{name}) say which JWTs buy which tokens. The runtime ones live together in one
 * sealed record, the policy document (store/policy-records.ts), whose generation grows with every change.
 */
import type { ValueType } from './value-types.js';

export const ACTIONS = ['read', 'list', 'write', 'delete'] as const;
export type Action = (typeof ACTIONS)[number];

export interface RoleRule {
  readonly namespaces: readonly string[];
  readonly actions: readonly Action[];
  readonly types: readonly ValueType[];
}

/**
 * The system privileges a role may hold beyond namespaces (auth/roles.ts says what each allows). Root holds
 * them all; `manage_*` never belong to a custom role.
 */
export const PRIVILEGES = [
  'manage_tokens',
  'create_tokens',
  'list_tokens',
  'manage_keyring',
  'read_keyring',
  'read_audit',
  'manage_roles',
  'read_metrics',
  'manage_webhooks',
] as const;
export type Privilege = (typeof PRIVILEGES)[number];

/** The privileges a custom role may be given. */
export const GRANTABLE_PRIVILEGES = [
  'create_tokens',
  'list_tokens',
  'read_keyring',
  'read_audit',
  'read_metrics',
] as const satisfies readonly Privilege[];

/** What a role's or a login role's name may be. */
export const ROLE_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** A custom role managed at runtime: its rules, as a configured role's, and any privileges it grants. */
export interface StoredRole {
  /**
   * Drawn when the role is created, kept when it is replaced: a token records it, so a role deleted and made
   * again under the same name does not bring back the tokens of the one deleted.
   */
  readonly id: string;
  readonly rules: readonly RoleRule[];
  readonly privileges: readonly Privilege[];
  /** ISO time of its last change. */
  readonly updated_at: string;
}

/** A scope a login role grants: its namespace may take values from the JWT's claims (`{claims.sub}`). */
export interface ScopeTemplate {
  readonly namespace: string;
  readonly read: boolean;
  readonly write: boolean;
}

/** Where a login role finds the issuer's signing keys: exactly one of them. */
export type KeySource =
  | { readonly jwks_url: string }
  | { readonly discovery: true }
  | { readonly public_keys: readonly string[] };

export interface LoginRole {
  /** As a runtime role's id: the tokens it issued are refused once it is deleted, even if made again. */
  readonly id: string;
  /** The `iss` to expect, exactly. */
  readonly issuer: string;
  readonly jwks_url?: string;
  /** Keys from `{issuer}/.well-known/openid-configuration`'s `jwks_uri`. */
  readonly discovery?: boolean;
  /** PEM public keys or JWKs (as JSON text). */
  readonly public_keys?: readonly string[];
  /** PEM certificates to trust for the issuer's HTTPS, beyond the system's. */
  readonly ca_pem?: string;
  /** The JWT's `aud` must name one of them. */
  readonly bound_audiences: readonly string[];
  /** The `sub` to expect exactly (a glob with `*` when it has one). */
  readonly bound_subject?: string;
  /** Claim (dotted path) → accepted values: exact, or globs with `*`; a list accepts any of them. */
  readonly bound_claims?: Readonly<Record<string, string | readonly string[]>>;
  /**
   * What the token may do: at most one of role and scopes — exactly one without `group_roles`; with it, what
   * a login whose groups name no role gets (none: refused).
   */
  readonly role?: string;
  readonly scopes?: readonly ScopeTemplate[];
  /** The claim (dotted path) holding the caller's groups; default `groups`. */
  readonly groups_claim?: string;
  /**
   * Group → role: a login whose groups name one of these roles gets it; naming several, the one the caller
   * chose among them (`token_role`).
   */
  readonly group_roles?: Readonly<Record<string, string>>;
  /** People sign in through the issuer's authorization-code flow with PKCE (auth/oidc-login.ts). */
  readonly oidc?: OidcClientSettings;
  /** The token's lifetime (seconds) and the longest renewals may take it to from its creation. */
  readonly ttl: number;
  readonly max_ttl: number;
  /** Claim (dotted path) → token metadata field. */
  readonly claims_to_metadata?: Readonly<Record<string, string>>;
  /** ISO time of its last change. */
  readonly updated_at: string;
}

/** Coffer as a client of an OpenID Provider: the login role's `discovery` gives the endpoints. */
export interface OidcClientSettings {
  readonly client_id: string;
  /** Kept sealed with the login role; never shown (GET says `client_secret_set`). None: a public client. */
  readonly client_secret?: string;
  /** Asked for; default openid, profile, email. */
  readonly scopes: readonly string[];
  /** Redirect addresses besides the loopback ones (http://127.0.0.1:PORT/…, any port) always allowed. */
  readonly redirect_uris?: readonly string[];
}

/** The runtime roles and login roles, as one sealed record. */
export interface PolicyDocument {
  /** Grows by one with every change; 0 for a store that has none yet. */
  readonly generation: number;
  readonly roles: Readonly<Record<string, StoredRole>>;
  readonly loginRoles: Readonly<Record<string, LoginRole>>;
}

export const EMPTY_POLICIES: PolicyDocument = { generation: 0, roles: {}, loginRoles: {} };
