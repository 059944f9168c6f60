/**
 * One audit stream of this process's chain: every line, in order, checkpoints included, handed over by the
 * writer (writer.ts) once the local chain — the spool — holds it, and sent by its transport in batches. A
 * batch the receiver does not take is sent again (after 250 ms, doubling to 5 s) before anything after it,
 * so an outage loses nothing and reorders nothing; while it lasts the lines wait in memory, counted as the
 * stream's lag. A required stream's lines are waited for: the writer answers a request only once each
 * required stream has its line (writer.ts).
 */
import type { Logger } from 'pino';
import type { StreamSpec } from './stream-spec.js';
import type { StreamTransport } from './transports.js';

/** Lines sent in one batch at the most. */
const BATCH = 1000;
const FIRST_RETRY_MS = 250;
const LAST_RETRY_MS = 5_000;

interface Queued {
  readonly line: string;
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
  private queue: Queued[] = [];
  private sending = false;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private lastError: string | null = null;
  private count = 0;
  private closed = false;
  private idle: (() => void)[] = [];

  constructor(
    readonly spec: StreamSpec,
    private readonly transport: StreamTransport,
    private readonly log: Logger,
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
      lag: this.queue.length,
      delivered: this.count,
    };
  }

  /** Takes lines that follow every line offered before; resolves once the receiver has all of them. */
  offer(lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      lines.forEach((line, i) => {
        this.queue.push(i === lines.length - 1 ? { line, delivered: resolve } : { line });
      });
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
        this.pump();
      });
    }
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.transport.close();
    return this.queue.length;
  }

  private pump(): void {
    if (this.sending || this.retryTimer !== null || this.closed) return;
    if (this.queue.length === 0) {
      for (const wake of this.idle.splice(0)) wake();
      return;
    }
    this.sending = true;
    const batch = this.queue.slice(0, BATCH);
    this.transport
      .send(batch.map((q) => q.line))
      .then(
        () => {
          this.queue.splice(0, batch.length);
          this.count += batch.length;
          this.retryMs = FIRST_RETRY_MS;
          if (this.lastError !== null) {
            this.log.info(
              { event: 'audit.stream_resumed', stream: this.spec.name, lag: this.queue.length },
              'audit stream %s takes lines again',
              this.spec.name,
            );
            this.lastError = null;
          }
          for (const q of batch) q.delivered?.();
        },
        (err: Error) => {
          const reason = (err as NodeJS.ErrnoException).code ?? err.message;
          if (this.lastError === null)
            this.log.warn(
              {
                event: 'audit.stream_down',
                stream: this.spec.name,
                reason,
                lag: this.queue.length,
              },
              'audit stream %s does not take lines; they wait, in order, and are sent again',
              this.spec.name,
            );
          this.lastError = reason;
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.pump();
          }, this.retryMs);
          this.retryTimer.unref();
          this.retryMs = Math.min(LAST_RETRY_MS, this.retryMs * 2);
        },
      )
      .finally(() => {
        this.sending = false;
        this.pump();
      });
  }
}
