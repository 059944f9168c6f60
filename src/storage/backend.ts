/**
 * The storage contract. Storage is untrusted: it holds opaque bytes under ordered binary keys. Value
 * records are sealed or MACed by the kv service; the keyring is wrapped by the master key; every other
 * record (tokens, the root token, the audit chain registry, intent copies, the key index and counters, the
 * keyring generation, the rewrap state) by store/record-seal.ts (SECURITY.md, "Storage: what protects
 * each record").
 *
 * Every backend must pass test/storage/conformance.ts.
 */

export interface StorageEntry {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

/** Keys from `start` (inclusive) to `end` (exclusive), in byte order. */
export interface KeyRange {
  readonly start: Uint8Array;
  readonly end: Uint8Array;
  readonly limit?: number;
}

export type StorageWrite =
  | {
      readonly op: 'put';
      readonly key: Uint8Array;
      readonly value: Uint8Array;
      /**
       * The key is one only this transaction can write, because of a key its plan reads and writes (an
       * event at the position its plan took, store/event-log.ts): it needs no lock of its own.
       */
      readonly guarded?: true;
    }
  | { readonly op: 'delete'; readonly key: Uint8Array };

/** What a plan decided: the writes to apply and the result to hand back. */
export interface Plan<T> {
  readonly writes: readonly StorageWrite[];
  readonly result: T;
}

/**
 * Positions from a store's sequence (PositionSequence), handed to a plan that its transaction runs: each
 * `next()` is a position no other transaction has, greater than the plan's last. A backend without a
 * sequence hands none (the plan keeps its own counter under a key it reads and writes).
 */
export interface Positions {
  next(): number;
  /**
   * True when the plan runs only to learn what it would write — its keys, and how many positions it takes
   * — and its writes are not applied: a record at a position need not be made (only its key).
   */
  readonly counting?: boolean;
}

/** A plan: what to write, decided on the current values of the keys it reads. */
export type PlanFn<T> = (
  current: readonly (Uint8Array | undefined)[],
  positions?: Positions,
) => Plan<T>;

export interface StorageBackend {
  /**
   * True when every call is a round trip to a server (PostgreSQL): callers then prefer one call that reads
   * more (getWithLast) to several small ones, which an embedded store answers faster.
   */
  readonly remote: boolean;

  get(key: Uint8Array): Promise<Uint8Array | undefined>;

  /** Entries in the range, lazily; stopping the iteration early stops reading. */
  scan(range: KeyRange): AsyncIterable<StorageEntry>;

  /**
   * The distinct segments beneath `prefix`, in byte order, at most `range.limit`: for the keys in `range`
   * (each of which starts with `prefix`), the bytes after `prefix` up to the key's first byte 0x00 or 0x01
   * — the key layout's separators (store/layout.ts) — each segment once, however many keys share it. One
   * statement where the storage is a database: a listing page's child namespaces in one query.
   */
  segments(prefix: Uint8Array, range: KeyRange & { readonly limit: number }): Promise<Uint8Array[]>;

  /**
   * Every entry of the store in key order, from one consistent state of it, while writes go on (for a
   * snapshot); stopping the iteration early lets that state go.
   */
  everything(): AsyncIterable<StorageEntry>;

  /**
   * The value at `key` and the last entry of `range` (its greatest key), read together from one consistent
   * state of the store — one round trip where the storage is a database. (A key's index and its newest
   * version record, for a read.)
   */
  getWithLast(
    key: Uint8Array,
    range: KeyRange,
  ): Promise<{ readonly value: Uint8Array | undefined; readonly last: StorageEntry | undefined }>;

  /**
   * Reads `keys`, hands their current values to `plan`, and applies the writes it returns, all in one
   * atomic, isolated transaction: no other write to those keys comes between the read and the writes,
   * in this process or any other sharing the store. `plan` is synchronous and must not have side
   * effects: a backend may run it more than once (PostgreSQL runs it first on unlocked values to learn
   * which keys to lock) and uses the result of its last run. If that run throws, nothing is written and the
   * promise rejects with its error. The promise resolves only once the writes are durable (synced to disk).
   *
   * `expected`, when given, is what the caller just read at `keys`: a backend that runs the plan before the
   * transaction (PostgreSQL) runs it on these instead of reading them again. Only which keys the plan
   * writes is learnt from that run; a wrong expectation costs a run more, never a wrong result.
   */
  atomic<T>(
    keys: readonly Uint8Array[],
    plan: PlanFn<T>,
    expected?: readonly (Uint8Array | undefined)[],
  ): Promise<T>;

  /**
   * Stores `entries` under keys that only the caller ever writes and that no plan reads (an audit chain's
   * own lines, audit/database-copy.ts), in one durable write, without the locks `atomic` takes: one
   * statement where the storage is a database. All or none are stored; once the promise resolves they are
   * durable. Writing a key again replaces its value.
   */
  putOwn(entries: readonly StorageEntry[]): Promise<void>;

  /**
   * Tells `observer` of every write from now on (for the metrics, observe/metrics.ts). Optional: a backend
   * without it is simply not measured.
   */
  observeWrites?(observer: WriteObserver): void;

  /** What a backend that has them can tell of its connections and notifications, when scraped. */
  gauges?(): StorageGauges;

  close(): Promise<void>;
}

/** What a backend tells of its writes as they happen. */
export interface WriteObserver {
  /** A write (`atomic` or `putOwn`) that became durable, `seconds` after it was asked for. */
  written(seconds: number): void;
  /** One commit, and how many writes it made durable together (group commit: one flush for them all). */
  committed(writes: number): void;
}

/** A backend's state as a scrape sees it (PostgreSQL's: its pool and its notifications). */
export interface StorageGauges {
  /** Its connection pool: the most it opens, in use, idle, and requests waiting for one. */
  readonly pool?: {
    readonly max: number;
    readonly busy: number;
    readonly idle: number;
    readonly waiting: number;
  };
  /** Writes waiting for a group to take them (group commit), not yet sent to the database. */
  readonly writesQueued?: number;
  /**
   * How long this server's last probe notification took from sent to heard on its listening connection
   * (or, while one is unheard, how long it has been, if longer): how late other servers' changes arrive.
   * Undefined before the first probe.
   */
  readonly notificationLagSeconds?: number;
}

/**
 * An optional ability of a storage shared by several servers (PostgreSQL): being told promptly when any
 * server commits a write of an announced key (the keyring generation, which every keyring change bumps),
 * so that what a server caches follows at once instead of at its next periodic check.
 */
export interface ChangeFeed {
  /**
   * Calls `listener` with each announced key a commit wrote, from any server, and with undefined after a
   * gap in which such news may have been lost (a lost connection, now back): read it all again. Returns
   * the function that stops it.
   */
  onChange(listener: (key: Uint8Array | undefined) => void): () => void;
}

/**
 * A store whose point reads are local and synchronous (LMDB): it reads a key, then the keys its value
 * names, all from one consistent state and without a cursor — cheaper there than `getWithLast`'s range.
 */
export interface FollowingReads {
  /**
   * The value at `key` and, when there is one, the values at the keys `follow` names from it (in that
   * order), all read from one state of the store. An error `follow` throws rejects the promise.
   */
  getFollowing(
    key: Uint8Array,
    follow: (value: Uint8Array) => readonly Uint8Array[],
  ): Promise<{
    readonly value: Uint8Array | undefined;
    readonly followed: readonly (Uint8Array | undefined)[];
  }>;

  /** `getFollowing` for each of `keys`, all from one state of the store, in one call (a page of reads). */
  getFollowingMany(
    keys: readonly Uint8Array[],
    follow: (value: Uint8Array, index: number) => readonly Uint8Array[],
  ): Promise<
    {
      readonly value: Uint8Array | undefined;
      readonly followed: readonly (Uint8Array | undefined)[];
    }[]
  >;
}

/**
 * An optional ability of a storage whose transactions commit side by side (PostgreSQL): a sequence its
 * plans take positions from (Positions), in the transaction, instead of a counter every transaction would
 * lock to its commit. Positions then commit out of order, and some are never used (a transaction rolled
 * back, or one that took more than it wrote): a reader goes no further than `settledPosition()`.
 */
export interface PositionSequence {
  /**
   * A position at or below which every position ever taken is settled — its transaction committed or will
   * never commit — as of this call: a commit this caller heard of before calling is at or below it.
   */
  settledPosition(): Promise<number>;

  /**
   * Moves the sequence past `position` if it is not there yet (a store copied or restored, or written while
   * positions were counted under a key): no position at or below it is taken again.
   */
  positionsAfter(position: number): Promise<void>;
}

export function hasPositionSequence(
  storage: StorageBackend,
): storage is StorageBackend & PositionSequence {
  return typeof (storage as Partial<PositionSequence>).settledPosition === 'function';
}

export function hasFollowingReads(
  storage: StorageBackend,
): storage is StorageBackend & FollowingReads {
  return typeof (storage as Partial<FollowingReads>).getFollowing === 'function';
}

export function hasChangeFeed(storage: StorageBackend): storage is StorageBackend & ChangeFeed {
  return typeof (storage as Partial<ChangeFeed>).onChange === 'function';
}

/**
 * The storage cannot be reached (a database that is down, restarting or too slow to answer within its
 * statement timeout): the request answers 503 storage_unavailable and may be tried again. Whether a write
 * whose commit met this error was committed is unknown, so it is never acknowledged.
 */
export class StorageUnavailableError extends Error {
  constructor(
    reason: string,
    /** Whether the change it cut off was made: `not` only where the backend knows it was not. */
    readonly made: 'not' | 'unknown' = 'unknown',
  ) {
    super(`the storage cannot be reached (${reason})`);
    this.name = 'StorageUnavailableError';
  }
}
