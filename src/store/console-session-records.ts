/**
 * Web console sessions in storage (`U<sha256 of the session id, hex>`), sealed as every record is, with their
 * storage key bound in: the cookie's value is never stored, so reading the store gives no session to use.
 * Every worker and every server sharing the store reads the same record, so a sign-out (the record deleted)
 * ends the session everywhere at once. A damaged record reads as no session (the cookie is refused) and is
 * reported.
 */
import type { StorageBackend } from '../storage/backend.js';
import { CONSOLE_SESSIONS_RANGE, consoleSessionKey } from './layout.js';
import { RecordIntegrityError, type RecordSeal } from './record-seal.js';

export interface ConsoleSessionRecord {
  /** The token the session acts as: its id, or `root`. */
  readonly token_id: string;
  /** For the root token: which root token record was in force at sign-in (a new root token ends it). */
  readonly root_tag?: string;
  /** The header token state-changing calls must carry (X-Coffer-CSRF). */
  readonly csrf: string;
  /** How the person signed in: a pasted token, or OIDC (whose token is revoked at sign-out). */
  readonly via: 'token' | 'oidc';
  /** Milliseconds since the epoch. */
  readonly created_at: number;
  readonly last_seen_at: number;
  /** The absolute end: sign-in + the maximum lifetime, never past the token's expiry. */
  readonly expires_at: number;
}

export class ConsoleSessionRecords {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly onIntegrityError: (error: RecordIntegrityError) => void,
  ) {}

  async get(idHash: string): Promise<ConsoleSessionRecord | undefined> {
    const key = consoleSessionKey(idHash);
    const bytes = await this.storage.get(key);
    if (!bytes) return undefined;
    try {
      return this.seal.open<ConsoleSessionRecord>('console-session', key, bytes);
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      this.onIntegrityError(err);
      return undefined;
    }
  }

  /** Stores the session (durable once this resolves). */
  async put(idHash: string, record: ConsoleSessionRecord): Promise<void> {
    const key = consoleSessionKey(idHash);
    await this.storage.atomic([key], () => ({
      writes: [{ op: 'put', key, value: this.seal.seal('console-session', key, record) }],
      result: undefined,
    }));
  }

  /**
   * Deletes the records of sessions `ended` says are over (tidy: operator/tidy.ts) and returns how many;
   * each is checked again inside its own delete. A record that does not open is left (reported at use).
   */
  async purge(ended: (record: ConsoleSessionRecord) => boolean): Promise<number> {
    const open = (key: Uint8Array, bytes: Uint8Array): ConsoleSessionRecord | undefined => {
      try {
        return this.seal.open<ConsoleSessionRecord>('console-session', key, bytes);
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
        return undefined;
      }
    };
    const over: Uint8Array[] = [];
    for await (const entry of this.storage.scan(CONSOLE_SESSIONS_RANGE)) {
      const record = open(entry.key, entry.value);
      if (record && ended(record)) over.push(entry.key);
    }
    let purged = 0;
    for (const key of over) {
      const gone = await this.storage.atomic([key], ([bytes]) => {
        const record = bytes && open(key, bytes);
        return record && ended(record)
          ? { writes: [{ op: 'delete' as const, key }], result: true }
          : { writes: [], result: false };
      });
      if (gone) purged++;
    }
    return purged;
  }

  /** Ends the session everywhere; true when there was one. */
  async delete(idHash: string): Promise<boolean> {
    const key = consoleSessionKey(idHash);
    return this.storage.atomic([key], ([stored]) => ({
      writes: stored ? [{ op: 'delete', key }] : [],
      result: stored !== undefined,
    }));
  }
}
