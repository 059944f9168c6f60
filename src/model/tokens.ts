/**
 * A token as Coffer keeps it (store/token-records.ts seals it): never the token value, only the argon2id
 * hash of its secret, its grant — a role or legacy namespace scopes —, metadata and times.
 */

/** A legacy scope as stored: booleans already defaulted. */
export interface Scope {
  readonly namespace: string;
  readonly read: boolean;
  readonly write: boolean;
}

/**
 * Free metadata set when a token is created (POST /v1/auth/token's `metadata`, a login role's
 * `claims_to_metadata`): string fields, bounded (see METADATA_LIMITS). `name` is also written into every
 * audit entry of the token's requests (`token_name`).
 */
export interface TokenMetadata {
  readonly name?: string;
  readonly description?: string;
  readonly [field: string]: string | undefined;
}

export const METADATA_LIMITS = {
  fields: 32,
  field: /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/,
  name: 128,
  value: 1024,
  bytes: 4096,
} as const;

/** Where a token came from when it was bought with a JWT (POST /v1/auth/login/jwt). */
export interface TokenLogin {
  /** The login role, and its id (model/policies.ts). */
  readonly role: string;
  readonly roleId?: string;
  readonly issuer: string;
  readonly subject: string;
}

export interface TokenRecord {
  readonly id: string;
  readonly hash: string;
  readonly role: string | null;
  readonly scopes: readonly Scope[] | null;
  readonly metadata: TokenMetadata;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly revokedAt: number | null;
  /**
   * The lifetime it was created with, in seconds: what a renewal extends it by (POST /v1/auth/token/renew).
   * Absent on tokens made before renewal existed, which never renewed: their lifetime is expiresAt − createdAt.
   */
  readonly ttl?: number;
  /** The id of the runtime role it was given (model/policies.ts), when it was given one. */
  readonly roleId?: string;
  /** The token that created it (a token with create_tokens); revoked with it. */
  readonly parent?: string;
  /** The login that bought it. */
  readonly login?: TokenLogin;
  /**
   * The latest expiry a renewal may give it (ms), below the server's max TTL from creation: a login role's
   * max_ttl, or the creating token's own expiry.
   */
  readonly expiryCap?: number;
}

/**
 * `role_deleted`: neither revoked nor expired, but what it was given is gone — its role (deleted with
 * `force`, or removed from the configuration) or the login role that made it — so every use is refused.
 * Only a listing says it (auth/token-service.ts); statusOf reads the record alone.
 */
export type TokenStatus = 'active' | 'revoked' | 'expired' | 'role_deleted';

export function statusOf(record: TokenRecord, now: number): TokenStatus {
  if (record.revokedAt !== null) return 'revoked';
  return record.expiresAt <= now ? 'expired' : 'active';
}

/** The root token as stored: never the token, only its argon2id hash (and its id when it has the cfr_ shape). */
export interface RootRecord {
  /** The id part when the root token has the cfr_ shape, else null. */
  readonly id: string | null;
  /** argon2id hash of the whole root token value. */
  readonly hash: string;
  readonly updatedAt: number;
}
