/**
 * Point reads gathered into one query. Every `get` and `getWithLast` asked for during one turn of the event
 * loop — under load, the token lookups and key reads of all the requests that arrived together — is sent as
 * one statement when the turn ends (setImmediate), instead of one round trip each. The statement reads one
 * snapshot, so a `getWithLast`'s key and last entry still come from one consistent state of the store; and
 * it is sent after each read was asked for, so a read sees every write committed before it was asked.
 *
 * What a query costs the server beyond its rows — the driver's work, the system calls, waking the
 * database's backend, the database's per-statement overhead — is paid once per batch.
 */
import type { KeyRange, StorageEntry } from './backend.js';

/** The keys to read, and for each range its last entry; one statement answers both. */
export interface Batch {
  readonly keys: readonly Buffer[];
  readonly ranges: readonly { readonly start: Buffer; readonly end: Buffer }[];
}

export interface BatchAnswer {
  /** The values found, by key (latin1). */
  readonly values: ReadonlyMap<string, Buffer>;
  /** Each range's last entry, by the range's index in the batch. */
  readonly lasts: ReadonlyMap<number, StorageEntry>;
}

export type RunBatch = (batch: Batch) => Promise<BatchAnswer>;

interface Waiter {
  readonly key: string;
  /** Index of the range whose last entry is wanted, or -1. */
  readonly range: number;
  readonly resolve: (answer: { value: Buffer | undefined; last: StorageEntry | undefined }) => void;
  readonly reject: (err: unknown) => void;
}

/** At most this many keys and ranges in one statement; more wait for the next. */
const MAX_BATCH = 256;

export class ReadBatcher {
  private keys = new Map<string, Buffer>();
  private ranges: { start: Buffer; end: Buffer }[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;

  constructor(private readonly run: RunBatch) {}

  get(key: Buffer): Promise<Buffer | undefined> {
    return this.add(key, undefined).then((answer) => answer.value);
  }

  getWithLast(
    key: Buffer,
    range: KeyRange,
  ): Promise<{ value: Buffer | undefined; last: StorageEntry | undefined }> {
    return this.add(key, range);
  }

  private add(
    key: Buffer,
    range: KeyRange | undefined,
  ): Promise<{ value: Buffer | undefined; last: StorageEntry | undefined }> {
    if (this.keys.size + this.ranges.length >= MAX_BATCH) this.flush();
    const name = key.toString('latin1');
    this.keys.set(name, key);
    let index = -1;
    if (range) {
      index = this.ranges.length;
      this.ranges.push({ start: Buffer.from(range.start), end: Buffer.from(range.end) });
    }
    const answer = new Promise<{ value: Buffer | undefined; last: StorageEntry | undefined }>(
      (resolve, reject) => this.waiters.push({ key: name, range: index, resolve, reject }),
    );
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return answer;
  }

  /** Sends what has gathered as one statement and hands each waiter its part of the answer. */
  private flush(): void {
    this.scheduled = false;
    if (this.waiters.length === 0) return;
    const batch: Batch = { keys: [...this.keys.values()], ranges: this.ranges };
    const waiters = this.waiters;
    this.keys = new Map();
    this.ranges = [];
    this.waiters = [];
    this.run(batch).then(
      ({ values, lasts }) => {
        for (const w of waiters)
          w.resolve({
            value: values.get(w.key),
            last: w.range < 0 ? undefined : lasts.get(w.range),
          });
      },
      (err: unknown) => {
        for (const w of waiters) w.reject(err);
      },
    );
  }
}
