/**
 * The audit log as the server uses it: intent entries (durable before a change), request entries (in the
 * file before their response is sent, synced within audit.sync_ms), and operator events (durable). Fail closed: when an entry cannot be made durable the request is answered 503
 * `audit_unavailable` instead (unless `failOpen`, for development, which serves it and logs loudly).
 */
import type { Logger } from 'pino';
import type { AuditFields } from './entry.js';
import { AuditUnavailableError, type AuditWriter, type Durability } from './writer.js';

export interface AuditLogOptions {
  readonly writer: AuditWriter;
  readonly failOpen: boolean;
  readonly log: Logger;
  /** Sync every request entry before its response (audit.sync_every_entry), not only intents and events. */
  readonly syncEveryEntry?: boolean;
}

export class AuditLog {
  private warnedOpen = 0;

  constructor(private readonly options: AuditLogOptions) {}

  get failing(): boolean {
    return this.options.writer.failing;
  }

  /** Whether requests are being refused: the log cannot be written and fail_open is off. */
  get refusing(): boolean {
    return this.options.writer.failing && !this.options.failOpen;
  }

  /**
   * Records a request's outcome; false when it could not be recorded and the request must be refused. The
   * entry is in the file (the kernel) before this resolves, so a killed process loses none, and on disk
   * within audit.sync_ms; a change it reports was already named, durably, by its intent entry.
   */
  async request(fields: AuditFields & { readonly kind: 'request' }): Promise<boolean> {
    return this.write(fields, this.options.syncEveryEntry ? 'durable' : 'written');
  }

  /**
   * Records that a request is about to commit a change (write, delete, token create or revoke), durably and
   * before the change: a process killed between the commit and the request's own entry still leaves an entry
   * that names the change. The request entry that follows carries the same request_id.
   */
  async intent(fields: Record<string, unknown>): Promise<boolean> {
    return this.write({ kind: 'intent', ...fields });
  }

  /** Records an operator event (start-up, key operations, token changes). */
  async event(event: string, fields: Record<string, unknown> = {}): Promise<boolean> {
    return this.write({ kind: 'event', event, ...fields });
  }

  /** Writes the final checkpoint; if the log is still unwritable, says so loudly rather than failing the shutdown. */
  async close(): Promise<void> {
    try {
      await this.options.writer.close();
    } catch (err) {
      if (!(err instanceof AuditUnavailableError)) throw err;
      this.options.log.error({ event: 'audit.unavailable', reason: err.message }, 'AUDIT LOG: entries still queued at shutdown could not be written');
    }
  }

  private async write(fields: AuditFields, durability: Durability = 'durable'): Promise<boolean> {
    try {
      await this.options.writer.append(fields, durability);
      return true;
    } catch (err) {
      if (!(err instanceof AuditUnavailableError)) throw err;
      if (this.options.failOpen) {
        // Loud, but not once per request: at most one line a second.
        if (Date.now() - this.warnedOpen > 1000) {
          this.warnedOpen = Date.now();
          this.options.log.error({ event: 'audit.unavailable', reason: err.message }, 'AUDIT LOG NOT WRITTEN: serving anyway because audit.fail_open is set');
        }
        return true;
      }
      this.options.log.error({ event: 'audit.unavailable', reason: err.message }, 'audit log cannot be written: refusing requests with 503');
      return false;
    }
  }
}
