/**
 * Store format upgrades, run at start-up by the process that prepares the store, before anything serves.
 *
 *   format 1  releases before the storage barrier: token records and the root token record as plain msgpack,
 *             the audit chain registry as plain JSON, intent copies as plain audit lines, the key index
 *             and version counters, the keyring generation and the rewrap state as plain msgpack and
 *             4-byte numbers
 *   format 2  those records sealed (intent copies, the key index, counters, the keyring generation and
 *             the rewrap state: MACed), with their storage keys bound in (store/record-seal.ts)
 *
 * The format is recorded inside the keyring, which the master key authenticates: it cannot be set back to
 * make plain records acceptable again, so a plain record in a format-2 store is refused like any forged one.
 * The upgrade is resumable: it goes through the records in batches, each one transaction that replaces a
 * record only if it still holds the bytes that were read, skips records already sealed, and raises the
 * format only after the last batch; a crash or kill in between leaves a store the next start continues.
 */
import type { Logger } from 'pino';
import { STORE_FORMAT } from '../crypto/keyring.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import type { KeyringHolder } from './keyring-store.js';
import { RECORD_KINDS } from './record-kinds.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

const BATCH = 500;
const REPORT_EVERY = 10_000;

export interface UpgradeResult {
  /** Records sealed (or MACed) now. */
  readonly sealed: number;
  /** Records that were neither sealed nor a readable format-1 record: left as they are, and refused when used. */
  readonly unreadable: number;
}

/** Brings the store to the current format; a no-op (null) when it is there already. */
export async function upgradeStore(
  storage: StorageBackend,
  holder: KeyringHolder,
  log: Logger,
): Promise<UpgradeResult | null> {
  const seal = holder.recordSeal;
  await holder.refresh();
  if (holder.current().storeFormat >= STORE_FORMAT) return null;
  log.info(
    'upgrading the store to format %d: sealing token records, the root token record and the audit chain registry; MACing intent copies, the key index, version counters, the keyring generation and the rewrap state',
    STORE_FORMAT,
  );
  const counts = { sealed: 0, unreadable: 0 };
  const byKind: string[] = [];
  for (const kind of RECORD_KINDS)
    byKind.push(`${await sealRange(storage, seal, kind, log, counts)} ${kind.kind}`);
  await holder.setStoreFormat(STORE_FORMAT);
  log.info(
    'store upgraded to format %d: sealed %s; %d unreadable left as they are',
    STORE_FORMAT,
    byKind.join(', '),
    counts.unreadable,
  );
  return counts;
}

/** A kind of record that format 1 kept plain: where it lives, how it is protected now, how it decoded. */
type PlainKind = (typeof RECORD_KINDS)[number];

/** Seals the format-1 records of one kind; returns how many it sealed. */
async function sealRange(
  storage: StorageBackend,
  seal: RecordSeal,
  plainKind: PlainKind,
  log: Logger,
  counts: { sealed: number; unreadable: number },
): Promise<number> {
  const { kind, range } = plainKind;
  let after: Uint8Array | null = null;
  let sealedHere = 0;
  for (;;) {
    const start: Uint8Array = after ? Buffer.concat([after, Buffer.from([0])]) : range.start;
    const batch: { key: Uint8Array; value: Uint8Array }[] = [];
    for await (const entry of storage.scan({ start, end: range.end, limit: BATCH }))
      batch.push(entry);
    if (batch.length === 0) return sealedHere;
    after = batch[batch.length - 1]!.key;
    const changes: { key: Uint8Array; old: Uint8Array; next: Buffer }[] = [];
    for (const { key, value } of batch) {
      const plain = plainRecord(seal, plainKind, key, value);
      if (plain === 'protected') continue;
      if (plain === null) {
        counts.unreadable++;
        log.error(
          { kind, key: printableKey(key) },
          'INTEGRITY ERROR during the store upgrade: a record is neither sealed nor readable; left as it is',
        );
        continue;
      }
      changes.push({
        key,
        old: value,
        next:
          plain instanceof Uint8Array
            ? seal.authenticate(kind, key, plain)
            : seal.seal(kind, key, plain),
      });
    }
    const written = await storage.atomic(
      changes.map((c) => c.key),
      (current) => {
        const writes: StorageWrite[] = [];
        changes.forEach((c, i) => {
          const now = current[i];
          if (now && Buffer.compare(now, c.old) === 0)
            writes.push({ op: 'put', key: c.key, value: c.next });
        });
        return { writes, result: writes.length };
      },
    );
    sealedHere += written;
    const before = counts.sealed;
    counts.sealed += written;
    // Progress for large stores: a line each time another REPORT_EVERY records are sealed.
    if (Math.floor(counts.sealed / REPORT_EVERY) > Math.floor(before / REPORT_EVERY))
      log.info('store upgrade: %d records sealed so far', counts.sealed);
  }
}

/** 'protected' for a record already sealed or MACed, the decoded record for a readable format-1 one, else null. */
function plainRecord(
  seal: RecordSeal,
  { kind, format1: decode, protection }: PlainKind,
  key: Uint8Array,
  value: Uint8Array,
): 'protected' | Record<string, unknown> | Uint8Array | null {
  try {
    if (protection === 'seal') seal.open(kind, key, value);
    else seal.verified(kind, key, value);
    return 'protected';
  } catch (err) {
    if (!(err instanceof RecordIntegrityError)) throw err;
  }
  try {
    return decode(value);
  } catch {
    return null;
  }
}
