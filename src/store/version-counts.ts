/**
 * How many stored version records each keyring version wraps (secret data keys) or authenticates (config
 * MACs): what key management and the seal report count. Read from each record's header; no value is
 * decrypted. O(records), about a second per million.
 */
import type { Keyring } from '../crypto/keyring.js';
import { unpackVersion } from './kv-format.js';
import type { KvRecords } from './kv-records.js';

export interface RecordCounts {
  secrets: number;
  configs: number;
}

/** A keyring version with its creation time, whether it is active, and the records counted for it. */
export interface VersionRow extends RecordCounts {
  readonly version: number;
  readonly created_at: string;
  readonly active: boolean;
}

/** Zero counts for every version of the keyring. */
export function emptyCounts(keyring: Keyring): Map<number, RecordCounts> {
  return new Map(keyring.versions().map((v) => [v.version, { secrets: 0, configs: 0 }]));
}

/** Every keyring version with its creation time, whether it is active, and the records counted for it. */
export function versionRows(
  keyring: Keyring,
  counts: ReadonlyMap<number, RecordCounts>,
): VersionRow[] {
  return keyring.versions().map((v) => ({
    version: v.version,
    created_at: new Date(v.createdAt).toISOString(),
    active: v.version === keyring.activeVersion,
    ...counts.get(v.version)!,
  }));
}

/**
 * The records each version of `keyring` wraps or authenticates, and how many records name a version it
 * does not hold, or do not parse (should be none).
 */
export async function countByKeyringVersion(
  kv: Pick<KvRecords, 'everyVersion'>,
  keyring: Keyring,
): Promise<{ counts: Map<number, RecordCounts>; unreadable: number }> {
  const counts = emptyCounts(keyring);
  let unreadable = 0;
  for await (const stored of kv.everyVersion()) {
    const record = unpackVersion(stored.bytes);
    const keyVersion =
      record && (record.type === 'secret' ? record.sealed.keyVersion : record.seal.keyVersion);
    const count = keyVersion === undefined ? undefined : counts.get(keyVersion);
    if (!record || !count) unreadable++;
    else if (record.type === 'secret') count.secrets++;
    else count.configs++;
  }
  return { counts, unreadable };
}
