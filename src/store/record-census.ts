/**
 * The store's own records (all but the version records, which the seal report checks one by one),
 * counted by kind for the seal report: with the record keys, each is opened (or
 * its MAC checked) in memory and the result dropped; without them (a structure-only report made without
 * the master key), each is checked only for the sealed form — a plain record (one written before the
 * storage barrier, or by hand) fails even then.
 */
import type { StorageBackend } from '../storage/backend.js';
import { RECORD_KINDS, type RecordKind } from './record-kinds.js';
import { MAC_BYTES, RecordIntegrityError, type RecordSeal, sealedForm } from './record-seal.js';

export interface RecordCount {
  readonly kind: RecordKind;
  readonly records: number;
  /** Records that failed to open or verify (or, without the keys, are not in the sealed form). */
  readonly failed: number;
}

export async function recordCensus(
  storage: StorageBackend,
  seal: RecordSeal | null,
): Promise<RecordCount[]> {
  const out: RecordCount[] = [];
  for (const { kind, range, protection } of RECORD_KINDS) {
    let [records, failed] = [0, 0];
    for await (const { key, value } of storage.scan(range)) {
      records++;
      try {
        if (seal === null) {
          if (protection === 'seal' ? sealedForm(value) === null : value.byteLength <= MAC_BYTES)
            failed++;
        } else if (protection === 'seal') seal.open(kind, key, value);
        else seal.verified(kind, key, value);
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
        failed++;
      }
    }
    out.push({ kind, records, failed });
  }
  return out;
}
