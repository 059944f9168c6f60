/**
 * The store's own records (all but the version records, which the seal report checks one by one),
 * counted by kind for the seal report: with the record keys, each is opened (or
 * its MAC checked) in memory and the result dropped; without them (a structure-only report made without
 * the master key), each is checked only for the sealed form — a plain record (one written before the
 * storage barrier, or by hand) fails even then.
 */
import { Packr } from 'msgpackr';
import { NONCE_BYTES } from '../crypto/aead.js';
import type { KeyRange, StorageBackend } from '../storage/backend.js';
import { AUDIT_CHAINS_RANGE, COUNTERS_RANGE, INTENT_JOURNAL_RANGE, METAS_RANGE, ROOT_TOKEN_KEY, TOKENS_RANGE } from '../storage/layout.js';
import { MAC_BYTES, RecordIntegrityError, type RecordKind, type RecordSeal } from './record-seal.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

export interface RecordCount {
  readonly kind: RecordKind;
  readonly records: number;
  /** Records that failed to open or verify (or, without the keys, are not in the sealed form). */
  readonly failed: number;
}

const KINDS: readonly { kind: RecordKind; range: KeyRange; protection: 'seal' | 'mac' }[] = [
  { kind: 'root-token', range: { start: ROOT_TOKEN_KEY, end: Buffer.concat([ROOT_TOKEN_KEY, Buffer.from([0])]) }, protection: 'seal' },
  { kind: 'token', range: TOKENS_RANGE, protection: 'seal' },
  { kind: 'audit-chain', range: AUDIT_CHAINS_RANGE, protection: 'seal' },
  { kind: 'intent-copy', range: INTENT_JOURNAL_RANGE, protection: 'mac' },
  { kind: 'kv-meta', range: METAS_RANGE, protection: 'mac' },
  { kind: 'kv-counter', range: COUNTERS_RANGE, protection: 'mac' },
];

/** Whether `bytes` has the sealed form of store/record-seal.ts, without opening it. */
function looksSealed(bytes: Uint8Array): boolean {
  try {
    const stored = packr.unpack(bytes) as { f?: unknown; n?: unknown; c?: unknown } | null;
    return stored?.f === 1 && stored.n instanceof Uint8Array && stored.n.length === NONCE_BYTES && stored.c instanceof Uint8Array;
  } catch {
    return false;
  }
}

export async function recordCensus(storage: StorageBackend, seal: RecordSeal | null): Promise<RecordCount[]> {
  const out: RecordCount[] = [];
  for (const { kind, range, protection } of KINDS) {
    let [records, failed] = [0, 0];
    for await (const { key, value } of storage.scan(range)) {
      records++;
      try {
        if (seal === null) {
          if (protection === 'seal' ? !looksSealed(value) : value.byteLength <= MAC_BYTES) failed++;
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
