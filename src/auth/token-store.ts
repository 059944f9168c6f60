/**
 * Token records in storage. A record holds the id, the argon2id hash of the secret, the grant (role or
 * scopes), metadata and times; never the token value.
 */
import { Packr } from 'msgpackr';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { TOKENS_RANGE, tokenKey } from '../storage/layout.js';
import type { Scope } from './access.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

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
}

export type TokenStatus = 'active' | 'revoked' | 'expired';

export function statusOf(record: TokenRecord, now: number): TokenStatus {
  if (record.revokedAt !== null) return 'revoked';
  return record.expiresAt <= now ? 'expired' : 'active';
}

const pack = (r: TokenRecord): Buffer => packr.pack(r);
const unpack = (bytes: Uint8Array): TokenRecord => packr.unpack(bytes) as TokenRecord;

export class TokenStore {
  constructor(private readonly storage: StorageBackend) {}

  async get(id: string): Promise<TokenRecord | undefined> {
    const bytes = await this.storage.get(tokenKey(id));
    return bytes && unpack(bytes);
  }

  /** Stores a new record, with `alongside` in the same transaction; false when the id is already taken. */
  create(record: TokenRecord, alongside: readonly StorageWrite[] = []): Promise<boolean> {
    const key = tokenKey(record.id);
    return this.storage.atomic([key], ([current]) =>
      current ? { writes: [], result: false } : { writes: [{ op: 'put', key, value: pack(record) }, ...alongside], result: true },
    );
  }

  /**
   * Marks a token revoked, with `alongside` in the same transaction; 'missing' when there is none,
   * 'already' when it was revoked before (and nothing is written).
   */
  revoke(id: string, now: number, alongside: readonly StorageWrite[] = []): Promise<'revoked' | 'already' | 'missing'> {
    const key = tokenKey(id);
    return this.storage.atomic([key], ([current]) => {
      if (!current) return { writes: [], result: 'missing' as const };
      const record = unpack(current);
      if (record.revokedAt !== null) return { writes: [], result: 'already' as const };
      return { writes: [{ op: 'put', key, value: pack({ ...record, revokedAt: now }) }, ...alongside], result: 'revoked' as const };
    });
  }

  async list(): Promise<TokenRecord[]> {
    const out: TokenRecord[] = [];
    for await (const entry of this.storage.scan(TOKENS_RANGE)) out.push(unpack(entry.value));
    return out;
  }
}
