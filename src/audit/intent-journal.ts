/**
 * The store's copy of intent entries not yet synced in the audit file. A change is committed together
 * with its intent's exact line (one transaction, one sync for both) while that line is written into the
 * audit file; so a change on disk always has its intent on disk too — in the file, or, when a power loss
 * took the file's unsynced tail (or the process died before the line's write), in the store, from where
 * the next start puts it back into the log (audit/intent-recovery.ts). Once the audit file is synced past
 * an intent and its request's change has ended (its own entry is written: `ended`), its copy is deleted, in
 * one background transaction per `cleanupMs`. (A change still running holds its copy's key until it ends:
 * deleting the copy then waited for it, and on PostgreSQL held back the other writes grouped with that
 * delete.) Copies carry a MAC bound to their storage key (store/audit-records.ts), so a copy planted in
 * the store is not taken for one.
 */
import type { AuditRecords } from '../store/audit-records.js';
import type { RecordWrite } from '../store/kv-records.js';

/** Requests whose change is followed at once; past it, the oldest is taken as ended (its entry was lost). */
const MAX_RUNNING = 10_000;

export class IntentJournal {
  /** Seqs whose copy may be in the store, ascending (intents are placed in chain order). */
  private copies: number[] = [];
  /** The seqs of copies whose change may still be running, by request id, and all of them. */
  private readonly running = new Map<string, number[]>();
  private readonly runningSeqs = new Set<number>();
  private syncedThrough = 0;
  private timer: NodeJS.Timeout | null = null;
  private cleaning: Promise<void> = Promise.resolve();

  constructor(
    private readonly records: Pick<AuditRecords, 'intentCopy' | 'deleteIntentCopies'>,
    private readonly chain: string,
    private readonly cleanupMs = 1000,
  ) {}

  /**
   * The write that stores intent `seq`'s line with the change it names; with `requestId`, the copy is
   * kept until that request's change has ended (`ended`).
   */
  copyOf(seq: number, line: string, requestId?: string): RecordWrite {
    this.copies.push(seq);
    if (requestId !== undefined) {
      this.runningSeqs.add(seq);
      const seqs = this.running.get(requestId);
      if (seqs) seqs.push(seq);
      else this.running.set(requestId, [seq]);
      if (this.running.size > MAX_RUNNING) this.ended(this.running.keys().next().value as string);
    }
    return this.records.intentCopy(this.chain, seq, line);
  }

  /** Request `requestId`'s change has ended, committed or not: its copies may go once the file has them. */
  ended(requestId: string): void {
    const seqs = this.running.get(requestId);
    if (seqs === undefined) return;
    this.running.delete(requestId);
    for (const seq of seqs) this.runningSeqs.delete(seq);
    this.schedule();
  }

  /** The audit file is durable through `seq`: copies up to there are no longer needed. */
  synced(seq: number): void {
    if (seq <= this.syncedThrough) return;
    this.syncedThrough = seq;
    this.schedule();
  }

  /** A cleanup in `cleanupMs`, unless one is due already or no copy is synced yet. */
  private schedule(): void {
    if (this.timer !== null || this.copies.length === 0 || this.copies[0]! > this.syncedThrough)
      return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.cleaning = this.cleaning.then(() => this.cleanup());
    }, this.cleanupMs);
    this.timer.unref();
  }

  /** Deletes the copies the file holds durably now; the rest stay for the next start to recover. */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.cleaning;
    await this.cleanup();
  }

  private async cleanup(): Promise<void> {
    const done: number[] = [];
    const kept: number[] = [];
    for (const seq of this.copies)
      (seq <= this.syncedThrough && !this.runningSeqs.has(seq) ? done : kept).push(seq);
    if (done.length === 0) return;
    this.copies = kept;
    try {
      // Deleting a copy whose transaction was refused (it was never stored) is harmless.
      await this.records.deleteIntentCopies(done.map((seq) => ({ chain: this.chain, seq })));
    } catch {
      // Tried again at the next cleanup.
      this.copies = [...done, ...this.copies].sort((a, b) => a - b);
    }
  }
}
