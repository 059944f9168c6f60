/**
 * A store's records as a stream, for snapshots (snapshot.ts) and copies between stores (store-copy.ts):
 * their framing (the bytes a snapshot's checksum covers), and writing them into an empty store in
 * batches, the keyring record last.
 */
import type { StorageBackend, StorageEntry, StorageWrite } from '../storage/backend.js';
import { KEYRING_KEY } from './keyring-record.js';

/** Records written at a time. */
const BATCH = 1000;

/** A snapshot, restore or copy refused, saying why. */
export class SnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotError';
  }
}

/** One record as a snapshot holds it: key length (uint32 BE), key, value length (uint32 BE), value. */
export function frame(entry: StorageEntry): Buffer {
  const out = Buffer.allocUnsafe(8 + entry.key.byteLength + entry.value.byteLength);
  out.writeUInt32BE(entry.key.byteLength, 0);
  out.set(entry.key, 4);
  out.writeUInt32BE(entry.value.byteLength, 4 + entry.key.byteLength);
  out.set(entry.value, 8 + entry.key.byteLength);
  return out;
}

/** Refuses a target store that holds anything. */
export async function refuseNonEmpty(target: StorageBackend, what: string): Promise<void> {
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
export async function writeAll(
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
