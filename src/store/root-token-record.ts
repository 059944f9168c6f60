/**
 * The root token's record (`Sroot-token`): the argon2id hash of the root token (and its id when it has
 * the `cfr_` shape), sealed (kind `root-token`), and named in the keyring by its SHA-256, written in the
 * same transaction, so an older copy put back — which could make an earlier root token valid again — is
 * told apart and refused (RecordIntegrityError), as is one that fails to open.
 */
import type { RootRecord } from '../model/tokens.js';
import type { StorageBackend } from '../storage/backend.js';
import type { KeyringHolder } from './keyring-store.js';
import { ROOT_TOKEN_KEY as KEY } from './layout.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

export interface StoredRoot {
  readonly record: RootRecord;
  /** Whether the keyring names it yet (`unnamed`: a store from before the check, until its next start). */
  readonly named: 'named' | 'unnamed';
  readonly bytes: Uint8Array;
}

/** The sealed bytes of `record`, for a store being created (its keyring names them as it is written). */
export function sealRootRecord(seal: RecordSeal, record: RootRecord): Uint8Array {
  return seal.seal('root-token', KEY, record);
}

export class RootTokenRecord {
  constructor(
    private readonly storage: Pick<StorageBackend, 'get'>,
    private readonly keyring: Pick<
      KeyringHolder,
      'recordSeal' | 'rootRecordIs' | 'nameRootRecord' | 'guard'
    >,
  ) {}

  /**
   * The stored record; undefined when there is none. Throws RecordIntegrityError when it fails to open, or
   * when the keyring names another record (an older copy put back).
   */
  async read(): Promise<StoredRoot | undefined> {
    this.keyring.guard();
    const bytes = await this.storage.get(KEY);
    if (!bytes) return undefined;
    const record = this.keyring.recordSeal.open<RootRecord>('root-token', KEY, bytes);
    const named = this.keyring.rootRecordIs(bytes);
    if (named === 'other')
      throw new RecordIntegrityError(
        'root-token',
        printableKey(KEY),
        'is not the record the keyring names (an older copy put back?)',
      );
    return { record, bytes, named };
  }

  /**
   * Stores `record` and names it in the keyring, in one transaction; with `onlyIfUnnamed`, only when the
   * keyring names no record yet (another process set one first). Resolves to whether it is the one now.
   */
  replace(record: RootRecord, options: { onlyIfUnnamed: boolean }): Promise<boolean> {
    return this.keyring.nameRootRecord(KEY, sealRootRecord(this.keyring.recordSeal, record), {
      write: true,
      onlyIfUnnamed: options.onlyIfUnnamed,
    });
  }

  /** Names the record a store from before the check holds (trust on first use), unless one is named. */
  async nameStored(stored: StoredRoot): Promise<void> {
    if (stored.named === 'unnamed')
      await this.keyring.nameRootRecord(KEY, stored.bytes, { write: false, onlyIfUnnamed: true });
  }
}
