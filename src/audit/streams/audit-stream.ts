/**
 * One audit stream of this process's chain: every line, in order, checkpoints included, handed over by the
 * writer (writer.ts) once the local chain — the spool — holds it (a stream that is not required is handed
 * lines gathered and sealed, chain-streams.ts), and sent by its transport at once, in batches. A
 * batch the receiver does not take is sent again (after 250 ms, doubling to 5 s) before anything after it,
 * so an outage loses nothing and reorders nothing; while it lasts the lines wait in memory, counted as the
 * stream's lag. A required stream's lines are waited for: the writer answers a request only once each
 * required stream has its line (writer.ts).
 */
import type { Logger } from 'pino';
import type { ChainProgress } from './stream-progress.js';
import type { StreamSpec } from './stream-spec.js';
import type { StreamTransport } from './transports.js';

/** Lines sent in one batch at the most. */
const BATCH = 1000;
const FIRST_RETRY_MS = 250;
const LAST_RETRY_MS = 5_000;

/** What the writer offered at once: its lines, and who waits for all of them to be delivered. */
interface Offered {
  readonly lines: readonly string[];
  readonly delivered?: () => void;
}

export interface StreamState {
  readonly name: string;
  readonly required: boolean;
  /** The last send succeeded (or none was needed yet). */
  readonly up: boolean;
  /** Lines handed over and not yet delivered. */
  readonly lag: number;
  /** Lines delivered since the process started. */
  readonly delivered: number;
}

export class AuditStream {
  /** Offered and not yet delivered, in order; `lag` counts their lines. */
  private queue: Offered[] = [];
  private lag = 0;
  private sending = false;
  private timer: NodeJS.Timeout | null = null;
  private retryMs = FIRST_RETRY_MS;
  private lastError: string | null = null;
  private count = 0;
  private closed = false;
  private idle: (() => void)[] = [];

  constructor(
    readonly spec: StreamSpec,
    private readonly transport: StreamTransport,
    private readonly log: Logger,
    /** Where the stream's progress through this chain is kept, for a later start to go on from. */
    private readonly progress?: ChainProgress,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  get required(): boolean {
    return this.spec.required;
  }

  /** Down: the last send failed and lines wait for the next try. */
  get up(): boolean {
    return this.lastError === null;
  }

  state(): StreamState {
    return {
      name: this.spec.name,
      required: this.spec.required,
      up: this.up,
      lag: this.lag,
      delivered: this.count,
    };
  }

  /** Takes lines that follow every line offered before; resolves once the receiver has all of them. */
  offer(lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    this.lag += lines.length;
    if (!this.spec.required) {
      // (A ship of a busy server's SHIP_MS is sent in batches of up to BATCH lines, its seal last.)
      if (lines.length <= BATCH) this.queue.push({ lines });
      else
        for (let i = 0; i < lines.length; i += BATCH)
          this.queue.push({ lines: lines.slice(i, i + BATCH) });
      this.pump();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.queue.push({ lines, delivered: resolve });
      this.pump();
    });
  }

  /** Sends what is queued, for up to `waitMs`, then lets go; says how many lines were left unsent. */
  async close(waitMs: number): Promise<number> {
    if (this.queue.length > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        this.idle.push(() => {
          clearTimeout(timer);
          resolve();
        });
        if (this.up) this.pump();
      });
    }
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    // What a start after this one sends again: whatever the stream did not take, and what a broken
    // connection may still lose. (The chain's lines are numbered from 1, all offered to the stream.)
    this.progress?.save(Math.max(0, this.count - this.transport.inDoubt()));
    this.transport.close();
    return this.lag;
  }

  private pump(): void {
    if (this.sending || this.closed) return;
    // While down, only the retry timer sends.
    if (this.lastError !== null && this.timer !== null) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.queue.length === 0) {
      for (const wake of this.idle.splice(0)) wake();
      return;
    }
    // Whole offers, up to BATCH lines (an offer larger than that goes alone).
    let taken = 0;
    let lineCount = 0;
    while (
      taken < this.queue.length &&
      (taken === 0 || lineCount + this.queue[taken]!.lines.length <= BATCH)
    )
      lineCount += this.queue[taken++]!.lines.length;
    const batch = this.queue.slice(0, taken);
    const lines = taken === 1 ? batch[0]!.lines : batch.flatMap((o) => o.lines);
    this.sending = true;
    this.transport
      .send(lines)
      .then(
        () => {
          this.queue.splice(0, taken);
          this.lag -= lineCount;
          this.count += lineCount;
          this.progress?.took(Math.max(0, this.count - this.transport.inDoubt()));
          this.retryMs = FIRST_RETRY_MS;
          if (this.lastError !== null) {
            this.log.info(
              { event: 'audit.stream_resumed', stream: this.spec.name, lag: this.lag },
              'audit stream %s takes lines again',
              this.spec.name,
            );
            this.lastError = null;
          }
          for (const o of batch) o.delivered?.();
        },
        (err: Error) => {
          const reason = (err as NodeJS.ErrnoException).code ?? err.message;
          if (this.lastError === null)
            this.log.warn(
              { event: 'audit.stream_down', stream: this.spec.name, reason, lag: this.lag },
              'audit stream %s does not take lines; they wait, in order, and are sent again',
              this.spec.name,
            );
          this.lastError = reason;
          this.timer = setTimeout(() => {
            this.timer = null;
            this.pump();
          }, this.retryMs);
          this.timer.unref();
          this.retryMs = Math.min(LAST_RETRY_MS, this.retryMs * 2);
        },
      )
      .finally(() => {
        this.sending = false;
        if (this.lastError !== null) return;
        if (this.queue.length === 0) for (const wake of this.idle.splice(0)) wake();
        else this.pump();
      });
  }
}
