/** A token as answers show it: never its value or hash. */
import type { TokenLogin, TokenMetadata, TokenRecord, TokenStatus } from '../model/tokens.js';
import type { Scope } from './access.js';

export interface TokenView {
  readonly id: string;
  readonly role: string | null;
  readonly scopes: readonly Scope[] | null;
  readonly metadata: TokenMetadata;
  readonly created_at: string;
  readonly expires_at: string;
  readonly status?: TokenStatus;
  /** The token that created it, when one did (create_tokens). */
  readonly parent?: string;
  /** The login role, issuer and subject, when a login bought it. */
  readonly login?: TokenLogin;
}

/** A time as answers write it. */
export const iso = (ms: number): string => new Date(ms).toISOString();

export function view(record: TokenRecord): TokenView {
  return {
    id: record.id,
    role: record.role,
    scopes: record.scopes,
    metadata: record.metadata,
    created_at: iso(record.createdAt),
    expires_at: iso(record.expiresAt),
    ...(record.parent === undefined ? {} : { parent: record.parent }),
    ...(record.login === undefined
      ? {}
      : {
          login: {
            role: record.login.role,
            issuer: record.login.issuer,
            subject: record.login.subject,
          },
        }),
  };
}
