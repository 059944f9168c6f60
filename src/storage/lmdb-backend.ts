import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Database, open, type RootDatabase } from 'lmdb';
import type {
  FollowingReads,
  KeyRange,
  Plan,
  StorageBackend,
  StorageEntry,
  WriteObserver,
} from './backend.js';
import { StorageUnavailableError } from './backend.js';
import { type StoragePlugin, StorageTargetError } from './plugin.js';

export interface LmdbOptions {
  /** Directory holding data.mdb and lock.mdb. */
  readonly path: string;
}

/**
 * StorageBackend on an LMDB environment (lmdb-js). Writes go through lmdb-js's batched transactions,
 * so concurrent writes share one commit; with overlappingSync (lmdb-js's default on Linux) a commit's
 * promise resolves before its flush, so `atomic` also awaits `flushed` before reporting success.
 * Observed (observeWrites), a commit's size is the number of writes whose flush completed in the same
 * turn of the event loop: those lmdb-js committed and flushed together.
 */
export class LmdbBackend implements StorageBackend, FollowingReads {
  readonly remote = false;
  private readonly root: RootDatabase;
  private readonly db: Database<Buffer, Buffer>;
  private observer: WriteObserver | undefined;
  /** Writes made durable in this turn of the event loop, so far (one flush's, observed). */
  private flushedTogether = 0;

  constructor(options: LmdbOptions) {
    ignoreLmdbCommitEchoes();
    mkdirSync(options.path, { recursive: true, mode: 0o700 });
    this.root = open({ path: options.path, noSubdir: false, maxDbs: 4 });
    this.db = this.root.openDB<Buffer, Buffer>({
      name: 'coffer',
      keyEncoding: 'binary',
      encoding: 'binary',
    });
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.db.get(asBuffer(key));
  }

  async getFollowing(
    key: Uint8Array,
    follow: (value: Uint8Array) => readonly Uint8Array[],
  ): Promise<{ value: Uint8Array | undefined; followed: (Uint8Array | undefined)[] }> {
    // Synchronous reads in one turn of the event loop share lmdb-js's read transaction: one state.
    const value = this.db.get(asBuffer(key));
    if (value === undefined) return { value, followed: [] };
    return { value, followed: follow(value).map((next) => this.db.get(asBuffer(next))) };
  }

  async getFollowingMany(
    keys: readonly Uint8Array[],
    follow: (value: Uint8Array, index: number) => readonly Uint8Array[],
  ): Promise<{ value: Uint8Array | undefined; followed: (Uint8Array | undefined)[] }[]> {
    // Synchronous reads in one turn of the event loop share lmdb-js's read transaction: one state.
    return keys.map((key, index) => {
      const value = this.db.get(asBuffer(key));
      if (value === undefined) return { value, followed: [] };
      return {
        value,
        followed: follow(value, index).map((next) => this.db.get(asBuffer(next))),
      };
    });
  }

  async getWithLast(
    key: Uint8Array,
    range: KeyRange,
  ): Promise<{ value: Uint8Array | undefined; last: StorageEntry | undefined }> {
    // Synchronous reads in one turn of the event loop share lmdb-js's read transaction: one state.
    const value = this.db.get(asBuffer(key));
    const start = asBuffer(range.start);
    const end = asBuffer(range.end);
    // Backwards from the range's end; lmdb-js includes `start` and excludes `end` in either direction, so
    // the range's own end is skipped, and its start is looked up on its own. (A cursor costs a secret read
    // here ~13% in the server against plain gets: a key's read uses getFollowing instead.)
    for (const found of this.db.getKeys({
      start: end,
      end: start,
      reverse: true,
      limit: 2,
      snapshot: false,
    })) {
      const last = found as Buffer;
      if (Buffer.compare(last, end) >= 0) continue;
      const lastValue = this.db.get(last);
      if (lastValue !== undefined) return { value, last: { key: last, value: lastValue } };
    }
    const first = this.db.get(start);
    return { value, last: first === undefined ? undefined : { key: start, value: first } };
  }

  /** Seeks past each segment's keys: one cursor step per segment. */
  async segments(prefix: Uint8Array, range: KeyRange & { limit: number }): Promise<Uint8Array[]> {
    const found: Buffer[] = [];
    const end = asBuffer(range.end);
    let start = asBuffer(range.start);
    while (found.length < range.limit) {
      let key: Buffer | undefined;
      for (const k of this.db.getKeys({ start, end, limit: 1 })) key = k as Buffer;
      if (key === undefined) break;
      const segment = segmentOf(key, prefix.byteLength);
      found.push(segment);
      start = Buffer.concat([key.subarray(0, prefix.byteLength), segment, SKIP]);
    }
    return found;
  }

  async *everything(): AsyncIterable<StorageEntry> {
    // One range over the whole database reads from one read transaction (lmdb-js's snapshot).
    for (const { key, value } of this.db.getRange({ snapshot: true }))
      yield { key: Buffer.from(key), value: Buffer.from(value) };
  }

  async *scan(range: KeyRange): AsyncIterable<StorageEntry> {
    const entries = this.db.getRange({
      start: asBuffer(range.start),
      end: asBuffer(range.end),
      ...(range.limit === undefined ? {} : { limit: range.limit }),
    });
    for (const { key, value } of entries) yield { key, value };
  }

  async atomic<T>(
    keys: readonly Uint8Array[],
    plan: (current: readonly (Uint8Array | undefined)[]) => Plan<T>,
  ): Promise<T> {
    const started = this.observer && performance.now();
    // The callback runs inside lmdb-js's write transaction. lmdb-js does not roll back a plain
    // transaction on a throw, so the plan runs to completion before the first write.
    let result: T;
    try {
      result = await this.db.transaction(() => {
        const decided = plan(keys.map((key) => this.db.get(asBuffer(key))));
        for (const write of decided.writes) {
          if (write.op === 'put') this.db.put(asBuffer(write.key), asBuffer(write.value));
          else this.db.remove(asBuffer(write.key));
        }
        return decided.result;
      });
      await this.root.flushed;
    } catch (err) {
      throw await commitFailure(err);
    }
    if (started !== undefined) this.durable(started);
    return result;
  }

  observeWrites(observer: WriteObserver): void {
    this.observer = observer;
  }

  /** One write durable: its time, and its share of the flush that made it so. */
  private durable(started: number): void {
    const observer = this.observer!;
    observer.written((performance.now() - started) / 1000);
    if (this.flushedTogether++ === 0)
      setImmediate(() => {
        observer.committed(this.flushedTogether);
        this.flushedTogether = 0;
      });
  }

  async putOwn(entries: readonly StorageEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.atomic([], () => ({
      writes: entries.map((e) => ({ op: 'put' as const, key: e.key, value: e.value })),
      result: undefined,
    }));
  }

  async close(): Promise<void> {
    await this.root.flushed;
    await this.root.close();
  }
}

const COMMIT_FAILED = 'Commit failed (see commitError for details)';
let ignoring = false;

/**
 * lmdb-js (3.x, its issue #368) rejects a failed commit's promises more than once: the caller's, which
 * atomic() handles, and internal ones nobody can reach, which Node would treat as unhandled and end the
 * process for (a full disk ended every worker). Those internal echoes are recognised by lmdb-js's own
 * message and its `commitError` field and dropped; every other unhandled rejection ends the process as
 * Node's default does.
 */
function ignoreLmdbCommitEchoes(): void {
  if (ignoring) return;
  ignoring = true;
  process.on('unhandledRejection', (reason) => {
    if (reason instanceof Error && reason.message === COMMIT_FAILED && 'commitError' in reason) {
      (reason.commitError as Promise<unknown>).catch(() => undefined);
      return;
    }
    throw reason;
  });
}

/**
 * A commit lmdb-js could not make (a full disk, the map full, an I/O error): nothing of it was written
 * (LMDB aborts the transaction), and it is answered as storage that cannot be used now — 503 with
 * Retry-After — instead of a fault. lmdb-js rejects the commit with an error whose `commitError` is a second
 * promise, rejected with the cause a moment later; left without a handler, that rejection ended the process.
 */
async function commitFailure(err: unknown): Promise<unknown> {
  const cause = (err as { commitError?: unknown } | null)?.commitError;
  if (!(cause instanceof Promise)) return err;
  const reason = await Promise.race([
    cause.then(
      () => 'commit failed',
      (e: unknown) =>
        ((e as { code?: unknown }).code as string | undefined) ?? (e as Error).message,
    ),
    new Promise<string>((r) => setTimeout(() => r('commit failed'), 1000).unref()),
  ]);
  return new StorageUnavailableError(String(reason).slice(0, 80));
}

/** Past every key of a segment: its separators are 0x00 and 0x01. */
const SKIP = Buffer.from([0x02]);

/** The bytes of `key` from `offset` up to its first 0x00 or 0x01 byte. */
function segmentOf(key: Buffer, offset: number): Buffer {
  let end = offset;
  while (end < key.length && key[end]! > 0x01) end++;
  return Buffer.from(key.subarray(offset, end));
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The embedded store: LMDB in `<data_dir>/lmdb`; it has no settings of its own. */
export const lmdbStorage = {
  name: 'lmdb',
  settings: {},
  open: async (settings) => new LmdbBackend({ path: join(settings.data_dir, 'lmdb') }),
  mayExist: (settings) => existsSync(join(settings.data_dir, 'lmdb')),
  targetForm: 'lmdb:DIR',
  target: (where, config) => {
    if (where === undefined || where === '')
      throw new StorageTargetError('--to lmdb:DIR names the data directory to copy into');
    return { ...config, storage: 'lmdb', data_dir: resolve(where) };
  },
  sameStore: (a, b) => resolve(a.data_dir) === resolve(b.data_dir),
  describe: (settings) => settings.data_dir,
} satisfies StoragePlugin<'lmdb'>;
