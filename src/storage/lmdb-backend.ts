import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Database, open, type RootDatabase } from 'lmdb';
import type {
  FollowingReads,
  KeyRange,
  Plan,
  PlanFn,
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

  async atomic<T>(keys: readonly Uint8Array[], plan: PlanFn<T>): Promise<T> {
    const started = this.observer && performance.now();
    /** Given up on before the plan ran: it then writes nothing, whenever lmdb-js gets to it. */
    let abandoned = false;
    let decided: Plan<T> | undefined;
    // The callback runs inside lmdb-js's write transaction. lmdb-js does not roll back a plain
    // transaction on a throw, so the plan runs to completion before the first write.
    const committing = this.db.transaction(() => {
      if (abandoned) return undefined as T;
      decided = plan(keys.map((key) => this.db.get(asBuffer(key))));
      for (const write of decided.writes) {
        if (write.op === 'put') this.db.put(asBuffer(write.key), asBuffer(write.value));
        else this.db.remove(asBuffer(write.key));
      }
      return decided.result;
    });
    let result: T;
    try {
      const settled = await within(committing, STALL_MS);
      result =
        settled === STALLED
          ? await this.unstall(committing, decided, () => (abandoned = true))
          : settled;
      // The flush too can stall behind a write thread that failed (a full disk, seen in CI at caceb9c:
      // a write committed, then no answer, its flush never done): unconfirmed, it is not answered as made.
      if ((await within(this.root.flushed, FLUSH_MS)) === STALLED)
        throw new StorageUnavailableError(
          'the storage took this write but has not confirmed it is on disk; it may still be made',
        );
    } catch (err) {
      throw await commitFailure(err);
    }
    if (started !== undefined) this.durable(started);
    return result;
  }

  /**
   * A transaction lmdb-js has not settled after STALL_MS. On a full disk its write thread can fail a batch
   * (a page spill that finds no room) and only log it, leaving the batch's transactions pending for ever;
   * the request would then get no answer at all. What happened is found out before anything is answered:
   *
   * - the plan has not run: it is abandoned (when it runs it writes nothing), and the write was not made;
   * - it has run: an empty transaction queued after it settles only once lmdb-js is done with this one
   *   (they run in order); then its writes are there (committed: it goes on) or not (it failed, and a
   *   failed batch is never tried again).
   *
   * Either way a 503 is answered only for a write that was not made and never will be — except when lmdb-js
   * settles neither: then, after SETTLE_MS more, a write not there is answered 503 saying it may still be
   * made (unsure, never silent).
   */
  private async unstall<T>(
    committing: Promise<T>,
    decided: Plan<T> | undefined,
    abandon: () => void,
  ): Promise<T> {
    if (decided === undefined) {
      abandon();
      throw new StorageUnavailableError('the write was not taken in time; it was not made', 'not');
    }
    const after = await within(
      this.db
        .transaction(() => undefined)
        .then(
          () => true,
          () => true,
        ),
      PROBE_MS,
    );
    const made = (): boolean =>
      decided.writes.every((write) => {
        const now = this.db.get(asBuffer(write.key));
        return write.op === 'put'
          ? now !== undefined && Buffer.compare(now, asBuffer(write.value)) === 0
          : now === undefined;
      });
    if (after === STALLED) {
      // lmdb-js is not done with the batch even now (a write thread that failed a page spill on a full
      // disk, seen in CI, stalls everything after it). The request is answered all the same, after at most
      // SETTLE_MS more: its writes there (readers see a commit once its data pages are written) are made;
      // not there, it is answered 503 saying the write may still be made — never left without an answer.
      const settled = await within(
        committing.then(
          () => true,
          () => true,
        ),
        SETTLE_MS,
      );
      if (settled !== STALLED) return committing;
      if (made()) return decided.result;
      throw new StorageUnavailableError(
        'the storage has not finished this write and it is not there now; it may still be made',
      );
    }
    if (!made())
      throw new StorageUnavailableError('the commit failed; the write was not made', 'not');
    // Committed: its own promise may never settle, but its result is the plan's.
    return decided.result;
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
  // lmdb-js failed the batch and never tries it again: the write was not made.
  return new StorageUnavailableError(String(reason).slice(0, 80), 'not');
}

/** How long a transaction may take before lmdb-js is asked whether it is done with it (LmdbBackend.unstall). */
const STALL_MS = 3_000;
/** How long the transaction after it may take to settle, before only the stalled one's own word counts. */
const PROBE_MS = 3_000;
/** How much longer a write waits when the transaction after it has not settled either, before it is answered. */
const SETTLE_MS = 3_000;
/** How long a committed write's flush may take before the write is answered unconfirmed (503). */
const FLUSH_MS = 5_000;
const STALLED = Symbol('stalled');

/** `promise`'s value, or STALLED once `ms` have passed without it. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof STALLED> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<typeof STALLED>((resolve) => {
      timer = setTimeout(() => resolve(STALLED), ms);
    }),
  ]).finally(() => clearTimeout(timer));
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
