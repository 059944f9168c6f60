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

export interface TokenMetadata {
  readonly name?: string;
  readonly description?: string;
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
}

export type TokenStatus = 'active' | 'revoked' | 'expired';

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
