/**
 * Snapshots of a store's records, as stored: sealed or authenticated, nothing decrypted (SECURITY.md,
 * "Storage"), so a snapshot is as safe to keep as the store itself, and useless without the master key.
 *
 *   header   one JSON line of HEADER_BYTES bytes (padded with spaces): {"format":"coffer-snapshot",
 *            "version":3,"created_at":…,"records":n,"kinds":{…},"keyring":sha256 of the keyring record,
 *            "sha256":sha256 of the records,"mac":…}; `head -1` shows what a file holds and which keyring
 *            it needs
 *   records  each: key length (uint32 BE), key, value length (uint32 BE), value — in key order
 *   end      0xFFFFFFFF, then one JSON line: the header's records, kinds, keyring, sha256 and mac again
 *
 *   mac      HMAC-SHA256 under the keyring's snapshot key (HKDF of its permanent root, which only the
 *            master key opens) over "coffer-snapshot/3", created_at, records, kinds, keyring and sha256:
 *            someone who edits a record and recomputes the checksums cannot make it again, and a restore
 *            checks it — with the keyring the snapshot itself holds, opened by the master key — before it
 *            writes anything. Versions 1 and 2 had no MAC: restored only when asked to take them unchecked.
 *
 * Taken from one consistent state of the store while it serves (StorageBackend.everything), streamed: the
 * counts and the checksum are known only once the last record is written, so the header goes out first
 * as a placeholder that says nothing of them and is written over at the end (the file is then synced).
 * A file cut off before that has a header without counts and no end: refused. A restore goes only into
 * an empty store; it reads the whole file once to check its format, counts and checksum — header and end
 * alike — before writing anything, then writes it in batches. Version 1 files (the summary only at the
 * end, the checksum over the header and the records) are still read.
 */
import { createHash, createHmac, type Hash, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { Keyring } from '../crypto/keyring.js';
import type { KeyProvider } from '../keys/key-provider.js';
import type { StorageBackend, StorageEntry } from '../storage/backend.js';
import { KEYRING_KEY, openKeyringRecord } from './keyring-record.js';
import { frame, refuseNonEmpty, SnapshotError, writeAll } from './record-stream.js';

export { SnapshotError } from './record-stream.js';

const FORMAT = 'coffer-snapshot';
const VERSION = 3;
/** The versions this release reads (1 and 2 are not authenticated: restored only when asked). */
const READABLE = [1, 2, 3];
/** A version-2 header's size, newline included. */
const HEADER_BYTES = 4096;
/** Written at a time. */
const CHUNK = 1 << 20;
const END = 0xffff_ffff;

export interface SnapshotSummary {
  readonly records: number;
  /** Records by kind: the first byte of their storage key (V versions, M key index, T tokens, …). */
  readonly kinds: Record<string, number>;
  /** SHA-256 of the keyring record, hex: which keyring (and so which master key) the snapshot needs. */
  readonly keyring: string | null;
  readonly sha256: string;
  /** The snapshot's MAC (hex); null in versions 1 and 2, which had none. */
  readonly mac: string | null;
}

/** What a check of a whole file found: the summary, and what a restore needs to authenticate it. */
export interface CheckedSnapshot extends SnapshotSummary {
  readonly version: number;
  readonly created_at: string;
  /** The keyring record the snapshot holds (its MAC key is in it); null for an empty store's. */
  readonly keyringRecord: Uint8Array | null;
}

/** The MAC of a version-3 snapshot with `summary`, under `keyring`'s snapshot key. */
function snapshotMac(
  keyring: Keyring,
  createdAt: string,
  summary: Omit<SnapshotSummary, 'mac'>,
): string {
  return createHmac('sha256', keyring.snapshotKey())
    .update(
      JSON.stringify([
        'coffer-snapshot/3',
        createdAt,
        summary.records,
        summary.kinds,
        summary.keyring,
        summary.sha256,
      ]),
    )
    .digest('hex');
}

/** The header line: `fields` as JSON padded to HEADER_BYTES. */
function headerLine(fields: Record<string, unknown>): Buffer {
  const json = JSON.stringify(fields);
  if (Buffer.byteLength(json) > HEADER_BYTES - 1)
    throw new Error('the snapshot header is too long');
  return Buffer.from(`${json.padEnd(HEADER_BYTES - 1, ' ')}\n`);
}

/**
 * Writes a snapshot of `storage` into `file` (opened for writing, empty), syncs it and leaves it open;
 * `onRecord` is told the count as it goes.
 */
export async function writeSnapshot(
  storage: StorageBackend,
  file: FileHandle,
  now: number,
  keyring: Keyring,
  onRecord?: (records: number) => void,
): Promise<SnapshotSummary> {
  const identity = { format: FORMAT, version: VERSION, created_at: new Date(now).toISOString() };
  let position = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (): Promise<void> => {
    const chunk = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    for (let done = 0; done < chunk.length; ) {
      const { bytesWritten } = await file.write(chunk, done, chunk.length - done, position);
      done += bytesWritten;
      position += bytesWritten;
    }
  };
  const write = async (bytes: Buffer): Promise<void> => {
    pending.push(bytes);
    pendingBytes += bytes.length;
    if (pendingBytes >= CHUNK) await flush();
  };
  await write(headerLine(identity));
  const hash = createHash('sha256');
  let records = 0;
  const kinds: Record<string, number> = {};
  let keyringHash: string | null = null;
  for await (const entry of storage.everything()) {
    const framed = frame(entry);
    hash.update(framed);
    await write(framed);
    records++;
    const kind = String.fromCharCode(entry.key[0] ?? 0);
    kinds[kind] = (kinds[kind] ?? 0) + 1;
    if (Buffer.compare(entry.key, KEYRING_KEY) === 0)
      keyringHash = createHash('sha256').update(entry.value).digest('hex');
    if (records % 1000 === 0) onRecord?.(records);
  }
  onRecord?.(records);
  const counted = { records, kinds, keyring: keyringHash, sha256: hash.digest('hex') };
  const summary: SnapshotSummary = {
    ...counted,
    mac: snapshotMac(keyring, identity.created_at, counted),
  };
  const end = Buffer.alloc(4);
  end.writeUInt32BE(END, 0);
  await write(end);
  await write(Buffer.from(`${JSON.stringify(summary)}\n`));
  await flush();
  const header = headerLine({ ...identity, ...summary });
  await file.write(header, 0, header.length, 0);
  await file.sync();
  return summary;
}

/** Reads a snapshot file: its records in order, then (returned) its summary, checked against the bytes. */
async function* readSnapshot(
  file: string,
  hash: Hash,
): AsyncGenerator<StorageEntry, CheckedSnapshot, undefined> {
  let buffer: Buffer = Buffer.alloc(0);
  let headerRead = false;
  /** A version-2 header's summary, checked against the end's. */
  let fromHeader: SnapshotSummary | undefined;
  let ended = false;
  let counted = 0;
  let version = 0;
  let createdAt = '';
  let keyringRecord: Uint8Array | null = null;
  const kinds: Record<string, number> = {};
  for await (const chunk of createReadStream(file)) {
    buffer = buffer.length === 0 ? (chunk as Buffer) : Buffer.concat([buffer, chunk as Buffer]);
    if (!headerRead) {
      const newline = buffer.indexOf(0x0a);
      if (newline < 0) {
        if (buffer.length > 2 * HEADER_BYTES)
          throw new SnapshotError(`${file} is not a Coffer snapshot`);
        continue;
      }
      let header: { format?: unknown; version?: unknown } & Partial<SnapshotSummary>;
      try {
        header = JSON.parse(buffer.subarray(0, newline).toString('utf8'));
      } catch {
        throw new SnapshotError(`${file} is not a Coffer snapshot`);
      }
      if (header.format !== FORMAT) throw new SnapshotError(`${file} is not a Coffer snapshot`);
      if (!READABLE.includes(header.version as number))
        throw new SnapshotError(
          `${file} is a snapshot of version ${String(header.version)}; this release reads versions ${READABLE.join(' and ')}`,
        );
      version = header.version as number;
      createdAt = String((header as { created_at?: unknown }).created_at ?? '');
      if (header.version === 1) hash.update(buffer.subarray(0, newline + 1));
      else if (header.sha256 === undefined)
        throw new SnapshotError(
          `${file} is cut short: its header was never completed (the snapshot did not finish)`,
        );
      else fromHeader = header as SnapshotSummary;
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
      if (Buffer.compare(key, KEYRING_KEY) === 0) keyringRecord = value;
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
  if (
    fromHeader &&
    (fromHeader.records !== summary.records ||
      fromHeader.sha256 !== summary.sha256 ||
      fromHeader.keyring !== summary.keyring ||
      (fromHeader.mac ?? null) !== (summary.mac ?? null) ||
      JSON.stringify(fromHeader.kinds) !== JSON.stringify(summary.kinds))
  )
    throw new SnapshotError(`${file}: its header does not match its end (changed or damaged)`);
  if (version >= 3 && typeof summary.mac !== 'string')
    throw new SnapshotError(`${file}: it has no MAC (changed or damaged)`);
  return {
    records: summary.records,
    kinds: summary.kinds,
    keyring: summary.keyring,
    sha256,
    mac: version >= 3 ? summary.mac : null,
    version,
    created_at: createdAt,
    keyringRecord,
  };
}

/** Checks a snapshot file whole, writing nothing: format, counts and checksum (not its MAC: `authenticate`). */
export async function checkSnapshot(file: string): Promise<CheckedSnapshot> {
  const reader = readSnapshot(file, createHash('sha256'));
  for (;;) {
    const next = await reader.next();
    if (next.done) return next.value;
  }
}

/** How a restore authenticates a snapshot: the master key that opens the keyring it holds. */
export interface RestoreKey {
  readonly provider: KeyProvider;
  /** Restore a version 1 or 2 snapshot, which has no MAC to check (made before 2026-11-24). */
  readonly acceptUnauthenticated?: boolean;
}

/**
 * Checks that `checked` (a whole file read by checkSnapshot) is authentic: its MAC, under the snapshot key
 * of the keyring it holds, opened with `key.provider`. Throws SnapshotError when it is not.
 */
export async function authenticate(
  file: string,
  checked: CheckedSnapshot,
  key: RestoreKey,
): Promise<void> {
  if (checked.version < 3) {
    if (key.acceptUnauthenticated) {
      // The releases that wrote versions 1 and 2 stored keyrings without an epoch; every keyring stored
      // since has one, and those releases write version 3. So an unauthenticated file holding a keyring
      // with an epoch was not made by them: it was made (or remade) to skip the MAC. Never taken.
      if (checked.keyringRecord !== null) {
        const keyring = await openKeyringRecord(checked.keyringRecord, key.provider);
        if (keyring.epoch !== undefined)
          throw new SnapshotError(
            `${file} says it is a snapshot of version ${checked.version}, made before snapshots were authenticated, but the keyring it holds was stored by a release that authenticates its snapshots (version 3): the file was made to pass unchecked. Refused, even with --accept-unauthenticated; nothing was written`,
          );
      }
      return;
    }
    throw new SnapshotError(
      `${file} is a snapshot of version ${checked.version}, made before snapshots were authenticated: it cannot be checked for changes. Restore it only if you trust the file, with --accept-unauthenticated`,
    );
  }
  if (checked.keyringRecord === null)
    throw new SnapshotError(`${file} holds no keyring: there is nothing to authenticate it with`);
  const keyring = await openKeyringRecord(checked.keyringRecord, key.provider);
  const expected = Buffer.from(snapshotMac(keyring, checked.created_at, checked), 'hex');
  const given = Buffer.from(checked.mac ?? '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new SnapshotError(
      `${file} does not authenticate: it was changed after it was taken (its MAC does not match), or it was not made with the keyring it holds; nothing was written`,
    );
}

/**
 * Restores `file` into `storage`, which must be empty: the file is checked whole and authenticated first
 * (nothing is written from a file that fails), then its records are written in batches. `onRecord` is told
 * the count as it goes.
 */
export async function restoreSnapshot(
  storage: StorageBackend,
  file: string,
  key: RestoreKey,
  onRecord?: (records: number, total: number) => void,
): Promise<SnapshotSummary> {
  const summary = await checkSnapshot(file);
  await authenticate(file, summary, key);
  await refuseNonEmpty(storage, 'a snapshot is restored');
  // Read again as it is written: the records must be those just authenticated, or the keyring (written
  // last) is never written, and no server opens what was written.
  await writeAll(storage, sameAgain(file, summary.sha256), (n) => onRecord?.(n, summary.records));
  return summary;
}

/** The records of `file` once more, failing at the end (before the keyring is written) unless they hash to `sha256`. */
async function* sameAgain(file: string, sha256: string): AsyncGenerator<StorageEntry> {
  const reader = readSnapshot(file, createHash('sha256'));
  for (;;) {
    const next = await reader.next();
    if (next.done) {
      if (next.value.sha256 !== sha256)
        throw new SnapshotError(
          `${file} changed while it was restored: empty the target store and restore again`,
        );
      return;
    }
    yield next.value;
  }
}
