/**
 * The audit log as the server uses it: intent entries (placed before a change and committed with it),
 * request entries (in the file before their response is sent, synced within audit.sync_ms), and operator
 * events (durable). Fail closed: when an entry cannot be recorded the request is answered 503
 * `audit_unavailable` instead (unless `failOpen`, for development, which serves it and logs loudly).
 */
import type { Logger } from 'pino';
import type { RecordWrite } from '../store/kv-records.js';
import type { AuditFields } from './entry.js';
import type { IntentJournal } from './intent-journal.js';
import type { StreamState } from './streams/audit-stream.js';
import type { CatchUp } from './streams/catch-up.js';
import type { AuditWriter } from './writer.js';
import { AuditUnavailableError, type Durability, StreamUnavailableError } from './writer-types.js';

export interface AuditLogOptions {
  readonly writer: AuditWriter;
  readonly failOpen: boolean;
  readonly log: Logger;
  /** Sync every request entry before its response (audit.sync_every_entry), not only intents and events. */
  readonly syncEveryEntry?: boolean;
  /** Where intents' copies go with their changes; without one, each intent is synced on its own first. */
  readonly journal?: IntentJournal;
  /** The lines this host's stopped chains left for the streams, sent while serving (streams/catch-up.ts). */
  readonly catchUp?: CatchUp;
}

export class AuditLog {
  private warnedOpen = 0;
  /** Requests refused since the log last could be written (logged once, then counted). */
  private refused = 0;

  constructor(private readonly options: AuditLogOptions) {}

  /** This log's chain id. */
  get chain(): string {
    return this.options.writer.chain;
  }

  /**
   * The audit streams' states (streams/audit-stream.ts), for the metrics and the health report: a stream's
   * lag counts this chain's lines it has not taken, and the stopped chains' lines still waiting for it.
   */
  streams(): StreamState[] {
    const catchUp = this.options.catchUp;
    const states = this.options.writer.streamStates();
    return catchUp ? states.map((s) => ({ ...s, lag: s.lag + catchUp.waiting(s.name) })) : states;
  }

  /** Sends, while the server runs, the lines stopped chains left for the streams (streams/catch-up.ts). */
  catchUpWhileServing(): void {
    this.options.catchUp?.start();
  }

  get failing(): boolean {
    return this.options.writer.failing;
  }

  /** The log is failing because the storage that keeps its copy cannot be reached (writer.ts). */
  get storageUnavailable(): boolean {
    return this.options.writer.storageUnavailable;
  }

  /** Whether requests are being refused: the log cannot be written and fail_open is off. */
  get refusing(): boolean {
    return this.options.writer.failing && !this.options.failOpen;
  }

  /**
   * Records a request's outcome; false when it could not be recorded and the request must be refused. The
   * entry is in the file (the kernel) before this resolves, so a killed process loses none, and on disk
   * within audit.sync_ms; a change it reports was already named, durably, by its intent entry. With audit
   * streams, a change's entry (any method but GET) is answered once a signed seal follows it (writer.ts).
   */
  async request(
    fields: AuditFields & { readonly kind: 'request' },
    /** Its intent was recorded (and taken by every required stream) before its change: see writer.ts. */
    committed = false,
  ): Promise<boolean> {
    // Its change, if it made one, has ended: the intent's copy may go once the file has the intent.
    if (typeof fields.request_id === 'string') this.options.journal?.ended(fields.request_id);
    // A change's answer (any method but GET) waits for its line to be under a seal, when the writer seals.
    const change = fields.method !== 'GET';
    return this.settle(() =>
      this.options.writer.append(
        fields,
        this.options.syncEveryEntry ? 'durable' : change ? 'sealed' : 'written',
        committed,
      ),
    );
  }

  /**
   * Records that a request is about to commit a change (write, delete, token create or revoke): the intent
   * takes its place in the chain now, before the change, and resolves to the storage writes to commit with
   * the change — the intent's exact line (audit/intent-journal.ts) — so that the change is never on disk
   * without it and one sync covers both. The line reaches the file while the change commits, and before the
   * request's own entry (same request_id), which the response waits for: a response is never sent before
   * its intent is in the file, and a failed write of the intent fails that entry too (503). Resolves to null
   * when the log cannot be written now, and the change must be refused. Without a journal the intent is
   * synced before resolving.
   */
  async intent(fields: Record<string, unknown>): Promise<RecordWrite[] | null> {
    const { journal, writer } = this.options;
    const entry: AuditFields = { kind: 'intent', ...fields };
    // While the log is failing, the intent would wait in the queue while the change commits: refuse now.
    if (!journal || writer.failing) return (await this.write(entry)) ? [] : null;
    const copies: RecordWrite[] = [];
    const recorded = await this.settle(async () => {
      const placed = writer.place(entry, this.options.syncEveryEntry ? 'durable' : 'written');
      const requestId = typeof fields.request_id === 'string' ? fields.request_id : undefined;
      copies.push(journal.copyOf(placed.seq, placed.line, requestId));
      // With a required stream, the stream takes the intent before the change commits: refused now
      // (503, nothing changed) when it cannot, so that a committed change is never answered 503.
      if (writer.requiresStream) return placed.done;
      // Not awaited: the request's own entry, later in the chain, fails if this write does.
      placed.done.catch(() => undefined);
    });
    return recorded ? copies : null;
  }

  /** Records an operator event (start-up, key operations, token changes). */
  async event(event: string, fields: Record<string, unknown> = {}): Promise<boolean> {
    // A field named like the line's own head would be written twice, the second read instead (entry.ts).
    for (const head of ['seq', 'chain', 'ts', 'prev'])
      if (head in fields) throw new Error(`an audit event may not have a field named ${head}`);
    return this.write({ kind: 'event', event, ...fields });
  }

  /** Writes the final checkpoint; if the log is still unwritable, says so loudly rather than failing the shutdown. */
  async close(): Promise<void> {
    await this.options.catchUp?.stop();
    try {
      await this.options.writer.close();
    } catch (err) {
      if (!(err instanceof AuditUnavailableError)) throw err;
      this.options.log.error(
        { event: 'audit.unavailable', reason: err.message },
        'AUDIT LOG: entries still queued at shutdown could not be written',
      );
    }
    // Intents whose copies are still needed (the file could not be synced) stay in the store.
    await this.options.journal?.close();
  }

  private write(fields: AuditFields, durability: Durability = 'durable'): Promise<boolean> {
    return this.settle(() => this.options.writer.append(fields, durability));
  }

  /** Whether `recording` succeeded; a failure is refused, or served loudly with fail_open. */
  private async settle(recording: () => Promise<void>): Promise<boolean> {
    try {
      await recording();
      this.recovered();
      return true;
    } catch (err) {
      if (!(err instanceof AuditUnavailableError)) throw err;
      if (this.options.failOpen) {
        // Loud, but not once per request: at most one line a second.
        if (Date.now() - this.warnedOpen > 1000) {
          this.warnedOpen = Date.now();
          this.options.log.error(
            { event: 'audit.unavailable', reason: err.message },
            'AUDIT LOG NOT WRITTEN: serving anyway because audit.fail_open is set',
          );
        }
        return true;
      }
      // One line when refusing starts, and one with the count when the log is written again.
      if (this.refused++ === 0)
        this.options.log.error(
          { event: 'audit.unavailable', reason: err.message },
          this.storageUnavailable
            ? 'the storage that keeps the audit log cannot be reached: refusing requests with 503 storage_unavailable'
            : err instanceof StreamUnavailableError
              ? 'a required audit stream does not take lines: refusing requests with 503 audit_unavailable'
              : 'audit log cannot be written: refusing requests with 503 audit_unavailable',
        );
      return false;
    }
  }

  /** Says once that the log is written again after refusals, and how many requests were refused. */
  private recovered(): void {
    if (this.refused === 0) return;
    this.options.log.warn(
      { event: 'audit.available', refused: this.refused },
      `audit log written again; ${this.refused} requests were refused while it could not be`,
    );
    this.refused = 0;
  }
}
