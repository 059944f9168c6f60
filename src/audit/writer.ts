/**
 * One process's audit chain, written through its sink (sink.ts: the files of file-sink.ts), with copies
 * (stdout) after each batch.
 *
 * append() places the entry in the chain at once (so entries are in call order) and resolves when its line
 * is where it was asked to be: `durable` — synced to disk (fdatasync), for entries that name changes — or
 * `written` — in the file, i.e. in the kernel, which a killed process cannot lose, and synced within
 * `syncMs` (for reads, which then never wait for a disk). Lines are written in batches (group commit), one
 * batch at a time, and one fdatasync covers a whole batch. When a batch cannot be written (disk full,
 * directory gone read-only), its waiters are refused (the caller answers 503) but the lines stay queued,
 * in order, with a note of the refusal: they are written, chain intact, once the directory is writable
 * again, which a retry timer tests. While the sink is failing, append() refuses at once instead of waiting.
 *
 * Lines are linked and checkpoints signed as audit/entry.ts says (format 2). A checkpoint is appended every
 * `checkpointEvery` entries, after `checkpointMs` with entries but no checkpoint, and at close; each is
 * recorded in the store (store/audit-records.ts), so that a truncated or deleted file is detected even
 * when the checkpoints themselves are cut away, and a clean close records that the chain ended there.
 */
import { StorageUnavailableError } from '../store/store-errors.js';
import { type AuditFields, GENESIS } from './entry.js';
import type { StreamState } from './streams/audit-stream.js';
import { ChainStreams, SHIP_MS } from './streams/chain-streams.js';
import { refusedEntry, refuseQueue, renderLine, writeCopies } from './writer-lines.js';
import {
  type Appended,
  AuditUnavailableError,
  type AuditWriterOptions,
  type Durability,
  type Pending,
  StreamUnavailableError,
} from './writer-types.js';

export class AuditWriter {
  private seq = 0;
  private prev = GENESIS;
  private digest = GENESIS;
  /** The link to and digest through the last line written into the sink: where the lines queued continue. */
  private written = { link: GENESIS, digest: GENESIS };
  /** The newest checkpoint recorded in the store: a clean close records that the chain ended there. */
  private recorded: { seq: number; link: string; digest: string } | null = null;
  private sinceCheckpoint = 0;
  private queue: Pending[] = [];
  private writing: Promise<void> | null = null;
  private failure: string | null = null;
  /** The error behind `failure`. */
  private failureError: Error | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private checkpointTimer: NodeJS.Timeout;
  private closed = false;
  private closing = false;
  /** Bytes written since the last sync, and the timer that will sync them. */
  private unsynced = false;
  /** The seq of the last line written into the file. */
  private writtenThrough = 0;
  private syncTimer: NodeJS.Timeout | null = null;
  /** With sealBatches: the timer that seals read-only batches' lines and ships them, within SHIP_MS. */
  private shipTimer: NodeJS.Timeout | null = null;
  /** Whether the newest entry placed in the chain is a checkpoint: nothing after it to seal. */
  private sealed = true;
  /** The timed sync in flight: it runs beside the writing of later batches, never holding them up. */
  private syncing: Promise<void> | null = null;

  /** The chain's audit streams (streams/chain-streams.ts). */
  private readonly streams: ChainStreams;

  constructor(private readonly options: AuditWriterOptions) {
    this.streams = new ChainStreams(options.streams);
    this.checkpointTimer = setInterval(() => {
      if (this.sinceCheckpoint > 0 && !this.closed) void this.checkpoint().catch(() => undefined);
    }, options.checkpointMs);
    this.checkpointTimer.unref();
  }

  get chain(): string {
    return this.options.chain;
  }

  /** True while the last write failed and the backlog waits for the directory to be writable. */
  get failing(): boolean {
    return this.failure !== null || this.streams.failure() !== null;
  }

  /** Each audit stream's state: whether it takes lines, and how many wait for it. */
  streamStates(): StreamState[] {
    return this.streams.states();
  }

  /**
   * True while the log is failing because its sink could not reach the storage (the store's copy of the
   * chain, audit/database-copy.ts): the storage is down, and requests are answered as such.
   */
  get storageUnavailable(): boolean {
    return this.failure !== null && this.failureError instanceof StorageUnavailableError;
  }

  /** Whether a required stream must take each line before its answer goes out. */
  get requiresStream(): boolean {
    return this.streams.anyRequired;
  }

  /** Adds an entry; resolves once it is `durability`, rejects with AuditUnavailableError if not (yet). */
  append(
    fields: AuditFields,
    durability: Durability = 'durable',
    committed = false,
  ): Promise<void> {
    if (this.closed) return Promise.reject(new AuditUnavailableError('the audit log is closed'));
    return this.place(fields, durability, committed).done;
  }

  /** Like append, and also tells where in the chain the entry went and its exact line. */
  place(fields: AuditFields, durability: Durability = 'durable', committed = false): Appended {
    if (this.closed) throw new AuditUnavailableError('the audit log is closed');
    const pending = this.enqueue(fields, durability, false, committed);
    if (++this.sinceCheckpoint >= this.options.checkpointEvery) this.enqueueCheckpoint();
    const placed = { seq: pending.seq, line: pending.line };
    // A committed change's answer waits only for the file when a stream is down; anything else is refused.
    const down = this.failure ?? (committed ? null : this.streams.failure());
    if (down !== null) {
      this.kick();
      return { ...placed, done: Promise.reject(new AuditUnavailableError(down)) };
    }
    const done = new Promise<void>((resolve, reject) => pending.waiters.push({ resolve, reject }));
    this.kick();
    return { ...placed, done };
  }

  /** Appends a checkpoint now and waits until it is durable. */
  async checkpoint(): Promise<void> {
    const pending = this.enqueueCheckpoint();
    const done = new Promise<void>((resolve, reject) => pending.waiters.push({ resolve, reject }));
    this.kick();
    await done;
  }

  /**
   * A final checkpoint, then the file is closed. When the directory is still unwritable this makes one last
   * attempt and rejects with AuditUnavailableError: the lines still queued are lost with the process.
   */
  async close(): Promise<void> {
    clearInterval(this.checkpointTimer);
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = null;
    if (this.shipTimer) clearTimeout(this.shipTimer);
    this.shipTimer = null;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.closing = true;
    this.failure = null;
    try {
      await this.checkpoint();
      // Let the batch finish recording its checkpoint in the store before the store closes.
      await this.writing;
      await this.syncing;
      // The chain ends at its final checkpoint: verify then holds any line after it, or a file cut
      // before it, against the chain. (If this cannot be recorded, the next start closes the chain.)
      if (this.recorded?.seq === this.seq)
        await this.options.registry.closed(this.options.chain, this.recorded.seq);
    } finally {
      this.closed = true;
      await this.options.sink.close();
      for (const copy of this.options.copies ?? []) await copy.close().catch(() => undefined);
      await this.streams.close();
    }
  }

  /** Places an entry at the chain's end; `seal`: a batch's seal (a checkpoint the store does not record). */
  private enqueue(
    fields: AuditFields,
    durability: Durability = 'durable',
    seal = false,
    committed = false,
  ): Pending {
    this.seq += 1;
    const checkpoint = fields.kind === 'checkpoint';
    const recorded = checkpoint && !seal;
    // A recorded checkpoint is always synced: the store records it, and what it records must be on disk.
    const pending: Pending = {
      line: '',
      link: '',
      digest: '',
      fields,
      ts: this.options.now(),
      seq: this.seq,
      checkpoint,
      recorded,
      durable: durability === 'durable' || recorded,
      sealNow: durability !== 'written',
      committed,
      waiters: [],
    };
    renderLine(pending, this.prev, this.digest, this.options);
    this.prev = pending.link;
    this.digest = pending.digest;
    this.queue.push(pending);
    this.sealed = checkpoint;
    return pending;
  }

  /** Appends a seal (a checkpoint the store does not record) when anything follows the last checkpoint. */
  private seal(): void {
    if (!this.sealed) this.enqueue({ kind: 'checkpoint' }, 'written', true);
  }

  /**
   * Within SHIP_MS of a batch: seals what follows the last checkpoint (reads' lines) and ships the streams
   * that are not required everything through that seal (chain-streams.ts), their batch's signature last.
   */
  private scheduleShip(): void {
    if (this.shipTimer !== null || this.closed || (this.sealed && !this.streams.gathering)) return;
    this.shipTimer = setTimeout(() => {
      this.shipTimer = null;
      if (this.closed) return;
      this.seal();
      this.kick();
      this.streams.shipThrough(this.seq);
    }, SHIP_MS);
    this.shipTimer.unref();
  }

  private enqueueCheckpoint(): Pending {
    this.sinceCheckpoint = 0;
    return this.enqueue({ kind: 'checkpoint' });
  }

  /** The queued requests get 503 instead of their answers (writer-lines.ts, refuseQueue). */
  private refuseQueued(code: 'audit_unavailable' | 'storage_unavailable'): void {
    const end = refuseQueue(this.queue, code, this.written, this.options);
    if (!end) return;
    this.prev = end.link;
    this.digest = end.digest;
  }

  private kick(): void {
    if (this.writing || this.failure !== null) return;
    this.writing = this.drain().finally(() => {
      this.writing = null;
      if (this.queue.length > 0 && this.failure === null) this.kick();
    });
  }

  /**
   * Syncs `written` lines within syncMs of their write. The sync runs beside the writing loop: batches
   * written meanwhile are answered as usual (fdatasync covers what was written before it began; lines
   * written during it are left for the next one).
   */
  private scheduleSync(): void {
    if (this.syncTimer !== null || this.closed) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      this.timedSync();
    }, this.options.syncMs ?? 50);
    this.syncTimer.unref();
  }

  private timedSync(): void {
    if (!this.unsynced || this.closed) return;
    if (this.syncing) {
      // One at a time: the next starts when this one ends, and covers what was written meanwhile.
      this.syncing.finally(() => this.timedSync()).catch(() => undefined);
      return;
    }
    this.syncing = this.syncNow().finally(() => {
      this.syncing = null;
    });
  }

  private async syncNow(): Promise<void> {
    this.unsynced = false;
    const through = this.writtenThrough;
    try {
      await this.options.sink.sync();
    } catch {
      this.unsynced = true; // tried again with the next batch or timer
      this.scheduleSync();
      return;
    }
    this.options.onSynced?.(through);
  }

  /** Writes everything queued so far as one batch, and syncs it when any entry in it must be durable. */
  private async drain(): Promise<void> {
    // Let the requests of this turn of the event loop join the batch.
    await new Promise((r) => setImmediate(r));
    // A change's answer goes out under a signature: its batch ends with a seal.
    if (this.options.sealBatches && this.queue.some((p) => p.sealNow && !p.checkpoint)) this.seal();
    const batch = this.queue;
    this.queue = [];
    const lastCheckpoint = [...batch].reverse().find((p) => p.recorded);
    const mustSync = batch.some((p) => p.durable);
    const lines = batch.map((p) => p.line);
    try {
      await this.options.sink.write(lines);
    } catch (err) {
      this.queue = [...batch, ...this.queue];
      this.fail(err as NodeJS.ErrnoException, batch);
      return;
    }
    // Stored now: a killed process loses none of it. Written-only entries are answered at once.
    if (batch.length > 0) {
      const last = batch[batch.length - 1]!;
      this.writtenThrough = last.seq;
      this.written = { link: last.link, digest: last.digest };
    }
    // (With a required stream, every entry also waits for that stream: streamed(), below.)
    if (!this.streams.anyRequired)
      for (const p of batch) if (!p.durable) for (const w of p.waiters.splice(0)) w.resolve();
    if (!mustSync) {
      this.unsynced = true;
      this.scheduleSync();
    } else {
      try {
        this.unsynced = false; // this sync covers earlier written-only lines too
        await this.options.sink.sync();
        this.options.onSynced?.(this.writtenThrough);
      } catch (err) {
        // The lines are stored (not written again), but not known to be on disk: their requests are
        // refused, and the sync is tried again with the next batch.
        this.unsynced = true;
        this.fail(
          err as NodeJS.ErrnoException,
          batch.filter((p) => p.durable),
        );
        // The lines are in the chain all the same: the streams get them, in order.
        void this.streamed(batch, lines);
        return;
      }
    }
    if (await this.streamed(batch, lines))
      for (const p of batch) for (const w of p.waiters) w.resolve();
    await writeCopies(this.options.copies, lines);
    // The store remembers the newest checkpoint; if that write fails, the next checkpoint records it.
    if (lastCheckpoint) {
      await this.options.registry
        .checkpointed(this.options.chain, {
          seq: lastCheckpoint.seq,
          hash: lastCheckpoint.link,
          digest: lastCheckpoint.digest,
          file: this.options.sink.position,
        })
        .then(() => {
          this.recorded = {
            seq: lastCheckpoint.seq,
            link: lastCheckpoint.link,
            digest: lastCheckpoint.digest,
          };
        })
        .catch(() => undefined);
    }
  }

  /**
   * Hands the batch to every stream, in order, and waits for the required ones. False when a required one
   * did not take it in time: the batch's requests are refused (503) though their lines are in the chain,
   * which an `audit.refused` event then says; the stream still gets the lines, in order, when it is back.
   */
  private async streamed(batch: readonly Pending[], lines: readonly string[]): Promise<boolean> {
    if (batch.length === 0) return true;
    const waited = batch.some((p) => p.waiters.length > 0);
    const offered = this.streams.offer(lines, batch[batch.length - 1]!.seq, waited);
    if (this.options.sealBatches) this.scheduleShip();
    if (await offered) return true;
    const reason = this.streams.failure() ?? 'a required audit stream did not take lines in time';
    const error = new StreamUnavailableError(reason);
    // A committed change is answered as what happened (its line is in the file, its intent in the stream).
    const refused = batch
      .filter((p) => p.waiters.length > 0 && !p.checkpoint && !p.committed)
      .map((p) => p.seq);
    for (const p of batch)
      for (const w of p.waiters.splice(0)) p.committed ? w.resolve() : w.reject(error);
    if (refused.length > 0 && !this.closing) {
      this.enqueue(refusedEntry('stream_unavailable', refused));
      this.kick();
    }
    return false;
  }

  private fail(err: NodeJS.ErrnoException, batch: readonly Pending[]): void {
    this.failure = err.code ?? err.message;
    this.failureError = err;
    // Every line still queued is unwritten (a failed batch was put back at the head of the queue).
    this.refuseQueued(
      err instanceof StorageUnavailableError ? 'storage_unavailable' : 'audit_unavailable',
    );
    const error = new AuditUnavailableError(this.failure);
    for (const p of batch) for (const w of p.waiters.splice(0)) w.reject(error);
    for (const p of this.queue) for (const w of p.waiters.splice(0)) w.reject(error);
    // Say in the log itself which requests were refused, once it can be written again.
    const refused = batch.filter((p) => !p.checkpoint).map((p) => p.seq);
    if (refused.length > 0) this.enqueue(refusedEntry(this.failure, refused));
    if (this.closing) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.failure = null;
      if (this.queue.length === 0 && this.unsynced) this.scheduleSync();
      this.kick();
    }, 500);
    this.retryTimer.unref();
  }
}
