/**
 * What the keyring holds and what depends on it: every keyring version with its creation time, the active
 * one, and how many stored records each version wraps (secret data keys) or authenticates (config MACs).
 * Counting reads every version record's header (no value is decrypted): O(records), about a second per
 * million records.
 */
import type { Keyring } from '../crypto/keyring.js';
import { unpackVersion } from '../kv/records.js';
import type { StorageBackend } from '../storage/backend.js';
import { VERSIONS_RANGE } from '../storage/layout.js';
import type { KeyringHolder } from '../store/keyring-store.js';

export interface KeyringStatus {
  readonly provider: string;
  /** The master key wrapping the keyring, in words, and the migrations the store has seen. */
  readonly wrapped_by: string;
  readonly migrations: number;
  readonly migrated_at: string | null;
  readonly active_version: number;
  readonly generation: number;
  readonly versions: {
    version: number;
    created_at: string;
    active: boolean;
    secrets: number;
    configs: number;
  }[];
  /** Records whose keyring version is not in the keyring, or that do not parse: should be zero. */
  readonly unreadable: number;
}

export interface RecordCounts {
  secrets: number;
  configs: number;
}

/** Zero counts for every version of the keyring. */
export function emptyCounts(keyring: Keyring): Map<number, RecordCounts> {
  return new Map(keyring.versions().map((v) => [v.version, { secrets: 0, configs: 0 }]));
}

/** Every keyring version with its creation time, whether it is active, and the records counted for it. */
export function versionRows(
  keyring: Keyring,
  counts: ReadonlyMap<number, RecordCounts>,
): KeyringStatus['versions'] {
  return keyring.versions().map((v) => ({
    version: v.version,
    created_at: new Date(v.createdAt).toISOString(),
    active: v.version === keyring.activeVersion,
    ...counts.get(v.version)!,
  }));
}

export async function keyringStatus(
  storage: StorageBackend,
  holder: KeyringHolder,
): Promise<KeyringStatus> {
  await holder.refresh();
  const keyring = holder.current();
  const wrapping = holder.wrapping();
  const counts = emptyCounts(keyring);
  let unreadable = 0;
  for await (const entry of storage.scan(VERSIONS_RANGE)) {
    const record = unpackVersion(entry.value);
    const keyVersion =
      record && (record.type === 'secret' ? record.sealed.keyVersion : record.seal.keyVersion);
    const count = keyVersion === undefined ? undefined : counts.get(keyVersion);
    if (!record || !count) unreadable++;
    else if (record.type === 'secret') count.secrets++;
    else count.configs++;
  }
  return {
    provider: holder.providerName,
    wrapped_by: wrapping.description,
    migrations: wrapping.migrations,
    migrated_at: wrapping.migratedAt === null ? null : new Date(wrapping.migratedAt).toISOString(),
    active_version: keyring.activeVersion,
    generation: holder.generation,
    versions: versionRows(keyring, counts),
    unreadable,
  };
}
