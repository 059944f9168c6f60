/**
 * Snapshots of a store's records, as stored: sealed or authenticated, nothing decrypted (SECURITY.md,
 * "Storage"), so a snapshot is as safe to keep as the store itself, and useless without the master key.
 *
 *   header   one JSON line: {"format":"coffer-snapshot","version":1,"created_at":…}
 *   records  each: key length (uint32 BE), key, value length (uint32 BE), value — in key order
 *   end      0xFFFFFFFF, then one JSON line: {"records":n,"kinds":{…},"keyring":sha256 of the keyring
 *            record,"sha256":sha256 of every byte before the end marker}
 *
 * Taken from one consistent state of the store while it serves (StorageBackend.everything). A restore
 * goes only into an empty store; it reads the whole file once to check its format, counts and checksum
 * before writing anything, then writes it in batches.
 */
import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { StorageBackend, StorageEntry, StorageWrite } from '../storage/backend.js';
import { KEYRING_KEY } from '../store/keyring-store.js';

const FORMAT = 'coffer-snapshot';
const VERSION = 1;
const END = 0xffff_ffff;
const BATCH = 1000;

export interface SnapshotSummary {
  readonly records: number;
  /** Records by kind: the first byte of their storage key (V versions, M key index, T tokens, …). */
  readonly kinds: Record<string, number>;
  /** SHA-256 of the keyring record, hex: which keyring (and so which master key) the snapshot needs. */
  readonly keyring: string | null;
  readonly sha256: string;
}

export class SnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotError';
  }
}

function frame(entry: StorageEntry): Buffer {
  const out = Buffer.allocUnsafe(8 + entry.key.byteLength + entry.value.byteLength);
  out.writeUInt32BE(entry.key.byteLength, 0);
  out.set(entry.key, 4);
  out.writeUInt32BE(entry.value.byteLength, 4 + entry.key.byteLength);
  out.set(entry.value, 8 + entry.key.byteLength);
  return out;
}

/** Writes a snapshot of `storage` to `out`; `onRecord` is told the count as it goes. */
export async function writeSnapshot(
  storage: StorageBackend,
  out: Writable,
  now: number,
  onRecord?: (records: number) => void,
): Promise<SnapshotSummary> {
  const hash = createHash('sha256');
  const write = async (bytes: Buffer): Promise<void> => {
    hash.update(bytes);
    if (!out.write(bytes)) await once(out, 'drain');
  };
  await write(
    Buffer.from(
      `${JSON.stringify({ format: FORMAT, version: VERSION, created_at: new Date(now).toISOString() })}\n`,
    ),
  );
  let records = 0;
  const kinds: Record<string, number> = {};
  let keyring: string | null = null;
  for await (const entry of storage.everything()) {
    await write(frame(entry));
    records++;
    const kind = String.fromCharCode(entry.key[0] ?? 0);
    kinds[kind] = (kinds[kind] ?? 0) + 1;
    if (Buffer.compare(entry.key, KEYRING_KEY) === 0)
      keyring = createHash('sha256').update(entry.value).digest('hex');
    if (records % 1000 === 0) onRecord?.(records);
  }
  onRecord?.(records);
  const summary: SnapshotSummary = { records, kinds, keyring, sha256: hash.digest('hex') };
  const end = Buffer.alloc(4);
  end.writeUInt32BE(END, 0);
  out.write(end);
  out.write(`${JSON.stringify(summary)}\n`);
  out.end();
  await once(out, 'finish');
  return summary;
}

/** Reads a snapshot file: its records in order, then (returned) its summary, checked against the bytes. */
async function* readSnapshot(
  file: string,
  hash: Hash,
): AsyncGenerator<StorageEntry, SnapshotSummary, undefined> {
  let buffer: Buffer = Buffer.alloc(0);
  let headerRead = false;
  let ended = false;
  let counted = 0;
  const kinds: Record<string, number> = {};
  for await (const chunk of createReadStream(file)) {
    buffer = buffer.length === 0 ? (chunk as Buffer) : Buffer.concat([buffer, chunk as Buffer]);
    if (!headerRead) {
      const newline = buffer.indexOf(0x0a);
      if (newline < 0) {
        if (buffer.length > 4096) throw new SnapshotError(`${file} is not a Coffer snapshot`);
        continue;
      }
      let header: { format?: unknown; version?: unknown };
      try {
        header = JSON.parse(buffer.subarray(0, newline).toString('utf8'));
      } catch {
        throw new SnapshotError(`${file} is not a Coffer snapshot`);
      }
      if (header.format !== FORMAT) throw new SnapshotError(`${file} is not a Coffer snapshot`);
      if (header.version !== VERSION)
        throw new SnapshotError(
          `${file} is a snapshot of version ${String(header.version)}; this release reads version ${VERSION}`,
        );
      hash.update(buffer.subarray(0, newline + 1));
      buffer = buffer.subarray(newline + 1);
      headerRead = true;
    }
    while (!ended && buffer.length >= 4) {
      const keyLength = buffer.readUInt32BE(0);
      if (keyLength === END) {
        ended = true;
        break;
      }
      if (buffer.length < 8 + keyLength) break;
      const valueLength = buffer.readUInt32BE(4 + keyLength);
      const size = 8 + keyLength + valueLength;
      if (buffer.length < size) break;
      hash.update(buffer.subarray(0, size));
      const key = Buffer.from(buffer.subarray(4, 4 + keyLength));
      const value = Buffer.from(buffer.subarray(8 + keyLength, size));
      buffer = buffer.subarray(size);
      counted++;
      const kind = String.fromCharCode(key[0] ?? 0);
      kinds[kind] = (kinds[kind] ?? 0) + 1;
      yield { key, value };
    }
  }
  if (!ended)
    throw new SnapshotError(`${file} is cut short: it has no end (the copy is incomplete)`);
  let summary: SnapshotSummary;
  try {
    summary = JSON.parse(buffer.subarray(4).toString('utf8')) as SnapshotSummary;
  } catch {
    throw new SnapshotError(`${file}: its end record does not parse`);
  }
  const sha256 = hash.digest('hex');
  if (summary.sha256 !== sha256)
    throw new SnapshotError(
      `${file}: its checksum does not match its contents (changed or damaged)`,
    );
  if (summary.records !== counted || JSON.stringify(kinds) !== JSON.stringify(summary.kinds))
    throw new SnapshotError(`${file}: its counts do not match its records`);
  return summary;
}

/** Checks a snapshot file whole, writing nothing: format, counts and checksum. */
export async function checkSnapshot(file: string): Promise<SnapshotSummary> {
  const reader = readSnapshot(file, createHash('sha256'));
  for (;;) {
    const next = await reader.next();
    if (next.done) return next.value;
  }
}

/** Refuses a target store that holds anything. */
async function refuseNonEmpty(target: StorageBackend, what: string): Promise<void> {
  for await (const _ of target.scan({
    start: Buffer.alloc(0),
    end: Buffer.from([0xff, 0xff]),
    limit: 1,
  })) {
    const hint =
      what === 'a store is copied' && (await target.get(KEYRING_KEY)) === undefined
        ? ' (it holds no keyring record: if it is a copy of this store that was cut off, --resume goes on with it)'
        : '';
    throw new SnapshotError(
      `the target store is not empty: ${what} only into an empty store${hint}`,
    );
  }
}

/**
 * Writes `entries` into `target` in batches, the keyring record last: a write cut off before the end
 * leaves a store no server opens as the copied one (empty it and write again), never one that looks whole.
 */
async function writeAll(
  target: StorageBackend,
  entries: AsyncIterable<StorageEntry>,
  onWritten?: (written: number) => void,
): Promise<number> {
  let batch: StorageWrite[] = [];
  let keyring: StorageWrite | undefined;
  let written = 0;
  const flush = async (): Promise<void> => {
    const writes = batch;
    batch = [];
    await target.atomic([], () => ({ writes, result: undefined }));
    written += writes.length;
    onWritten?.(written);
  };
  for await (const entry of entries) {
    const write: StorageWrite = { op: 'put', key: entry.key, value: entry.value };
    if (Buffer.compare(entry.key, KEYRING_KEY) === 0) keyring = write;
    else batch.push(write);
    if (batch.length >= BATCH) await flush();
  }
  if (keyring) batch.push(keyring);
  if (batch.length > 0) await flush();
  return written;
}

/**
 * Restores `file` into `storage`, which must be empty: the file is checked whole first, then its records
 * are written in batches. `onRecord` is told the count as it goes.
 */
export async function restoreSnapshot(
  storage: StorageBackend,
  file: string,
  onRecord?: (records: number, total: number) => void,
): Promise<SnapshotSummary> {
  const summary = await checkSnapshot(file);
  await refuseNonEmpty(storage, 'a snapshot is restored');
  // Read again as it is written; the reader checks the checksum and counts once more at its end.
  await writeAll(storage, readSnapshot(file, createHash('sha256')), (n) =>
    onRecord?.(n, summary.records),
  );
  return summary;
}

/** What a copy cut off before its end left in a target: its records' count, hash and greatest key. */
interface CopiedPart {
  readonly records: number;
  readonly sha256: string;
  readonly last: Uint8Array | null;
}

async function copiedPart(target: StorageBackend): Promise<CopiedPart> {
  const hash = createHash('sha256');
  let records = 0;
  let last: Uint8Array | null = null;
  for await (const entry of target.everything()) {
    if (Buffer.compare(entry.key, KEYRING_KEY) === 0)
      throw new SnapshotError(
        'the target already holds a whole copy (its keyring record is there): nothing to resume',
      );
    hash.update(frame(entry));
    records++;
    last = entry.key;
  }
  return { records, sha256: hash.digest('hex'), last };
}

/**
 * `source`'s records, for a copy that resumes after `part`: those up to the part's last key (the keyring
 * aside, which a copy writes last) must be exactly what the part holds — checked before the first record
 * is handed on, so nothing is written when they are not — and those after it, with the keyring, are
 * handed on.
 */
async function* after(
  source: AsyncIterable<StorageEntry>,
  part: CopiedPart,
  counted: { records: number },
): AsyncGenerator<StorageEntry> {
  const hash = createHash('sha256');
  let before = 0;
  let checked = part.last === null;
  const check = (): void => {
    checked = true;
    if (before !== part.records || hash.digest('hex') !== part.sha256)
      throw new SnapshotError(
        'the target does not hold the beginning of a copy of this store (it differs from the store up to its last record): empty it and copy again',
      );
  };
  for await (const entry of source) {
    counted.records++;
    const keyring = Buffer.compare(entry.key, KEYRING_KEY) === 0;
    if (!checked && !keyring && Buffer.compare(entry.key, part.last!) <= 0) {
      hash.update(frame(entry));
      before++;
      continue;
    }
    if (!checked && !keyring) check();
    yield entry;
  }
  if (!checked) check();
}

/**
 * Copies every record of `source` (one consistent state of it) into `target`, the keyring last; then
 * counts the target's records against the source's. The target must be empty — or, with `resume`, hold
 * what an earlier copy of the same store cut off before its end wrote (no keyring record yet, every record
 * equal to the source's up to its last): the copy then goes on after it.
 */
export async function copyStore(
  source: StorageBackend,
  target: StorageBackend,
  onRecord?: (records: number) => void,
  options: { readonly resume?: boolean } = {},
): Promise<{ records: number; resumedAfter: number }> {
  const part: CopiedPart = options.resume
    ? await copiedPart(target)
    : { records: 0, sha256: '', last: null };
  if (!options.resume) await refuseNonEmpty(target, 'a store is copied');
  const counted = { records: 0 };
  await writeAll(target, after(source.everything(), part, counted), (written) =>
    onRecord?.(part.records + written),
  );
  let copied = 0;
  for await (const _ of target.everything()) copied++;
  if (copied !== counted.records)
    throw new SnapshotError(
      `the target holds ${copied} records after the copy, not ${counted.records}`,
    );
  return { records: counted.records, resumedAfter: part.records };
}
