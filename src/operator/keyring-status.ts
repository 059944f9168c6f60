/**
 * What the keyring holds and what depends on it: every keyring version with its creation time, the active
 * one, and how many stored records each version wraps (secret data keys) or authenticates (config MACs).
 * Counting reads every version record's header (no value is decrypted): O(records), about a second per
 * million records.
 */
import type { KeyringHolder } from '../store/keyring-store.js';
import type { KvRecords } from '../store/kv-records.js';
import { countByKeyringVersion, type VersionRow, versionRows } from '../store/version-counts.js';

export interface KeyringStatus {
  readonly provider: string;
  /** The master key wrapping the keyring, in words, and the migrations the store has seen. */
  readonly wrapped_by: string;
  readonly migrations: number;
  readonly migrated_at: string | null;
  readonly active_version: number;
  readonly generation: number;
  readonly versions: VersionRow[];
  /** Records whose keyring version is not in the keyring, or that do not parse: should be zero. */
  readonly unreadable: number;
}

export async function keyringStatus(
  kv: Pick<KvRecords, 'everyVersion'>,
  holder: KeyringHolder,
): Promise<KeyringStatus> {
  await holder.refresh();
  const keyring = holder.current();
  const wrapping = holder.wrapping();
  const { counts, unreadable } = await countByKeyringVersion(kv, keyring);
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
