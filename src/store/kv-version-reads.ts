/**
 * The read side of the barrier for key versions (kv-version-writes.ts is the write side): a version
 * record's value, opened (a secret, AES-GCM under its keyring version) or checked (a config value's MAC).
 * The store opens what it reads, so kv/ never holds an envelope; a record that fails to open or verify is a
 * RecordIntegrityError naming the version (answered 500), never a value.
 */
import { SealedDataError } from '../crypto/aead.js';
import { openSecret, verifyConfig } from '../crypto/envelope.js';
import type { KeyringHolder } from './keyring-store.js';
import { recordIdentity, type VersionRecord } from './kv-format.js';
import type { KvRecords } from './kv-records.js';
import type { VersionIdentity } from './kv-version-writes.js';

const keyVersionOf = (record: VersionRecord): number =>
  record.type === 'secret' ? record.sealed.keyVersion : record.seal.keyVersion;

export class VersionReader {
  constructor(
    private readonly keyring: Pick<KeyringHolder, 'current' | 'refresh'>,
    private readonly records: Pick<KvRecords, 'versionError'>,
  ) {}

  /** Whether `record` opens with the keyring this process holds, without reading the keyring again. */
  loaded(record: VersionRecord): boolean {
    return this.keyring.current().has(keyVersionOf(record));
  }

  /** The value of `record` (version `id.version` of the key), at once: its keyring version is `loaded`. */
  valueNow(id: Omit<VersionIdentity, 'type'>, record: VersionRecord): string {
    const keyring = this.keyring.current();
    const identity = recordIdentity(id, record);
    try {
      if (record.type === 'secret') return openSecret(keyring, identity, record.sealed);
      verifyConfig(keyring, identity, record.value, record.seal);
      return record.value;
    } catch (err) {
      if (err instanceof SealedDataError)
        throw this.records.versionError(
          { namespace: id.namespace, key: id.key },
          id.version,
          `failed to open or verify (${record.type})`,
        );
      throw err;
    }
  }

  /**
   * The value of `record`; sealed under a keyring version this process has not loaded yet (another process
   * rotated), the keyring is read again first.
   */
  async value(id: Omit<VersionIdentity, 'type'>, record: VersionRecord): Promise<string> {
    if (!this.loaded(record)) await this.keyring.refresh();
    return this.valueNow(id, record);
  }
}
