/**
 * One process's audit chain, written to JSON-lines files in the audit directory:
 *   audit-<chain>-<n>.jsonl     n = 1, 2, …; a new file when one reaches maxFileBytes, the chain continuing
 *
 * append() places the entry in the chain at once (so entries are in call order) and resolves when its line
 * is on disk: lines are written durably (O_DSYNC) in batches (group commit), one batch at a time. When a
 * batch cannot be written (disk full, directory gone read-only), its waiters are refused (the caller answers
 * 503) but the lines stay queued, in order, with a note of the refusal: they are written, chain intact,
 * once the directory is writable again, which a retry timer tests. While the sink is failing, append()
 * refuses at once instead of waiting.
 *
 * A checkpoint is appended every `checkpointEvery` entries, after `checkpointMs` with entries but no
 * checkpoint, and at close; each is recorded in the store (audit/registry.ts), so that a truncated or
 * deleted file is detected even when the checkpoints themselves are cut away.
 */
import { constants, mkdirSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointMac, entryLine, GENESIS, lineHash, type AuditFields } from './entry.js';
import type { AuditRegistry } from './registry.js';

export interface AuditWriterOptions {
  readonly dir: string;
  readonly chain: string;
  /** The checkpoint MAC key of the current keyring. */
  readonly key: () => Uint8Array;
  readonly registry: AuditRegistry;
  readonly checkpointEvery: number;
  readonly checkpointMs: number;
  readonly maxFileBytes: number;
  readonly now: () => number;
  /** Also write every line here (stdout), after it is durable in the file. */
  readonly mirror?: (line: string) => void;
}

export class AuditUnavailableError extends Error {
  constructor(reason: string) {
    super(`the audit log cannot be written (${reason})`);
    this.name = 'AuditUnavailableError';
  }
}

interface Pending {
  readonly line: string;
  readonly seq: number;
  readonly checkpoint: boolean;
  readonly waiters: { resolve: () => void; reject: (err: Error) => void }[];
}

export class AuditWriter {
  private seq = 0;
  private prev = GENESIS;
  private sinceCheckpoint = 0;
  private queue: Pending[] = [];
  private writing: Promise<void> | null = null;
  private failure: string | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private checkpointTimer: NodeJS.Timeout;
  private handle: FileHandle | null = null;
  private file = 0;
  private fileBytes = 0;
  private closed = false;
  private closing = false;

  constructor(private readonly options: AuditWriterOptions) {
    mkdirSync(options.dir, { recursive: true, mode: 0o700 });
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
    return this.failure !== null;
  }

  /** Adds an entry; resolves once it is durable, rejects with AuditUnavailableError if it is not (yet). */
  append(fields: AuditFields): Promise<void> {
    if (this.closed) return Promise.reject(new AuditUnavailableError('the audit log is closed'));
    const pending = this.enqueue(fields);
    if (++this.sinceCheckpoint >= this.options.checkpointEvery) this.enqueueCheckpoint();
    if (this.failure !== null) return Promise.reject(new AuditUnavailableError(this.failure));
    const done = new Promise<void>((resolve, reject) => pending.waiters.push({ resolve, reject }));
    this.kick();
    return done;
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
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.closing = true;
    this.failure = null;
    try {
      await this.checkpoint();
      // Let the batch finish recording its checkpoint in the store before the store closes.
      await this.writing;
    } finally {
      this.closed = true;
      await this.handle?.close();
      this.handle = null;
    }
  }

  private enqueue(fields: AuditFields): Pending {
    this.seq += 1;
    const line = entryLine(this.options.chain, { seq: this.seq, prev: this.prev }, this.options.now(), fields);
    this.prev = lineHash(line);
    const pending: Pending = { line, seq: this.seq, checkpoint: fields.kind === 'checkpoint', waiters: [] };
    this.queue.push(pending);
    return pending;
  }

  private enqueueCheckpoint(): Pending {
    this.sinceCheckpoint = 0;
    const seq = this.seq + 1;
    return this.enqueue({ kind: 'checkpoint', mac: checkpointMac(this.options.key(), this.options.chain, seq, this.prev) });
  }

  private kick(): void {
    if (this.writing || this.failure !== null) return;
    this.writing = this.drain().finally(() => {
      this.writing = null;
      if (this.queue.length > 0 && this.failure === null) this.kick();
    });
  }

  /** Writes everything queued so far as one batch. */
  private async drain(): Promise<void> {
    // Let the requests of this turn of the event loop join the batch.
    await new Promise((r) => setImmediate(r));
    const batch = this.queue;
    this.queue = [];
    const lastCheckpoint = [...batch].reverse().find((p) => p.checkpoint);
    try {
      await this.writeBatch(batch);
    } catch (err) {
      this.queue = [...batch, ...this.queue];
      this.fail(err as NodeJS.ErrnoException, batch);
      return;
    }
    for (const p of batch) for (const w of p.waiters) w.resolve();
    if (this.options.mirror) for (const p of batch) this.options.mirror(p.line);
    // The store remembers the newest checkpoint; if that write fails, the next checkpoint records it.
    if (lastCheckpoint) {
      await this.options.registry.checkpointed(this.options.chain, { seq: lastCheckpoint.seq, hash: lineHash(lastCheckpoint.line), file: this.file }).catch(() => undefined);
    }
  }

  /**
   * Writes one batch. The file is open with O_DSYNC, so the write returns once the lines are durable (one
   * system call where write + fdatasync took two). It runs on libuv's thread pool, so the event loop keeps
   * serving, and queueing the next batch, while the disk syncs.
   */
  private async writeBatch(batch: readonly Pending[]): Promise<void> {
    if (this.handle === null || this.fileBytes >= this.options.maxFileBytes) await this.nextFile();
    const handle = this.handle!;
    const text = Buffer.from(batch.map((p) => `${p.line}\n`).join(''));
    const start = this.fileBytes;
    try {
      let written = 0;
      while (written < text.length) written += (await handle.write(text, written, text.length - written, start + written)).bytesWritten;
      this.fileBytes = start + text.length;
    } catch (err) {
      // Never leave half a batch behind: the same lines are written again from `start` later (and if this
      // truncate fails too, that write overwrites from `start` all the same).
      await handle.truncate(start).catch(() => undefined);
      throw err;
    }
  }

  private async nextFile(): Promise<void> {
    await this.handle?.close();
    this.handle = null;
    this.file += 1;
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_DSYNC;
    this.handle = await open(join(this.options.dir, `audit-${this.options.chain}-${this.file}.jsonl`), flags, 0o600);
    this.fileBytes = 0;
    // Make the new file's name durable too.
    const dir = await open(this.options.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  private fail(err: NodeJS.ErrnoException, batch: readonly Pending[]): void {
    if (this.handle === null) this.file -= 1; // the file was not created: its number is used again
    this.failure = err.code ?? err.message;
    const error = new AuditUnavailableError(this.failure);
    for (const p of batch) for (const w of p.waiters.splice(0)) w.reject(error);
    for (const p of this.queue) for (const w of p.waiters.splice(0)) w.reject(error);
    // Say in the log itself which requests were refused, once it can be written again.
    const refused = batch.filter((p) => !p.checkpoint).map((p) => p.seq);
    if (refused.length > 0) this.enqueue({ kind: 'event', event: 'audit.refused', reason: this.failure, refused_seqs: refused, outcome: { status: 503, code: 'audit_unavailable' } });
    if (this.closing) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.failure = null;
      this.kick();
    }, 500);
    this.retryTimer.unref();
  }
}
