/**
 * The store's copy of intent entries not yet synced in the audit file. A change is committed together
 * with its intent's exact line (one transaction, one sync for both) while that line is written into the
 * audit file; so a change on disk always has its intent on disk too — in the file, or, when a power loss
 * took the file's unsynced tail (or the process died before the line's write), in the store, from where
 * the next start puts it back into the log (audit/intent-recovery.ts). Once the audit file is synced past
 * an intent, its copy is deleted, in one background transaction per `cleanupMs`. Copies carry a MAC
 * bound to their storage key (store/audit-records.ts), so a copy planted in the store is not taken for one.
 */
import type { AuditRecords } from '../store/audit-records.js';
import type { RecordWrite } from '../store/kv-records.js';

export class IntentJournal {
  /** Seqs whose copy may be in the store, ascending (intents are placed in chain order). */
  private copies: number[] = [];
  private syncedThrough = 0;
  private timer: NodeJS.Timeout | null = null;
  private cleaning: Promise<void> = Promise.resolve();

  constructor(
    private readonly records: Pick<AuditRecords, 'intentCopy' | 'deleteIntentCopies'>,
    private readonly chain: string,
    private readonly cleanupMs = 1000,
  ) {}

  /** The write that stores intent `seq`'s line with the change it names. */
  copyOf(seq: number, line: string): RecordWrite {
    this.copies.push(seq);
    return this.records.intentCopy(this.chain, seq, line);
  }

  /** The audit file is durable through `seq`: copies up to there are no longer needed. */
  synced(seq: number): void {
    if (seq <= this.syncedThrough) return;
    this.syncedThrough = seq;
    if (this.timer !== null || this.copies.length === 0 || this.copies[0]! > seq) return;
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
    let n = 0;
    while (n < this.copies.length && this.copies[n]! <= this.syncedThrough) n++;
    if (n === 0) return;
    const done = this.copies.splice(0, n);
    try {
      // Deleting a copy whose transaction was refused (it was never stored) is harmless.
      await this.records.deleteIntentCopies(done.map((seq) => ({ chain: this.chain, seq })));
    } catch {
      this.copies.unshift(...done); // tried again after the next sync
    }
  }
}
