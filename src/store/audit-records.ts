/**
 * The audit log's records in the store (SECURITY.md, "Storage"):
 *
 *   A <chain>              the chain registry: when each chain started, its newest checkpoint, whether it
 *                          ended (sealed)
 *   Saudit-chains          how many chains the store has started (MACed): each chain's record holds its
 *                          ordinal, so a chain whose record and files were deleted leaves a gap
 *   J <chain> 0 <u32 seq>  an intent line's copy, committed with the change it names (MACed)
 *   L <chain> 0 <u32 seq>  on shared storage, a run of a chain's lines from seq on (sealed)
 *
 * The audit log (audit/) decides what goes in them; this module is the only one that reads and writes them.
 */
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { packUint32, unpackUint32 } from '../storage/uint32.js';
import type { HighWater } from './high-water.js';
import {
  AUDIT_CHAINS_RANGE,
  AUDIT_COUNT_KEY,
  AUDIT_LINES_RANGE,
  auditChainKey,
  auditLinesKey,
  auditLinesRange,
  INTENT_JOURNAL_RANGE,
  intentJournalKey,
  parseAuditLinesKey,
  parseIntentJournalKey,
} from './layout.js';
import { RecordIntegrityError, type RecordSeal } from './record-seal.js';

export interface ChainCheckpoint {
  readonly seq: number;
  /** The link to the checkpoint line (format 1: its SHA-256): the `prev` of the line after it. */
  readonly hash: string;
  /** Format 2: the running digest through the checkpoint line (audit/entry.ts). */
  readonly digest?: string;
  readonly file: number;
}

/** Who writes a chain, as its record says (format 2). */
export interface ChainWriter {
  readonly host: string;
  readonly pid: number;
  /** How long the writer lets entries wait for a checkpoint (its audit.checkpoint_seconds), in ms. */
  readonly checkpoint_ms: number;
}

export interface ChainRecord {
  readonly chain: string;
  readonly started_at: string;
  readonly last_checkpoint: ChainCheckpoint | null;
  /** 2 for chains started since 2026-11-24 (keyed links, signed checkpoints); absent: format 1. */
  readonly format?: 2;
  /** The chain's place among every chain the store started (1, 2, …). */
  readonly ordinal?: number;
  readonly writer?: ChainWriter;
  /**
   * Set when the chain has ended: at its final checkpoint (`by: "close"`, a clean stop), or, for a chain
   * whose process stopped without that, by a later start (`by`: that start's chain), at its last line.
   */
  readonly closed?: { readonly seq: number; readonly at: string; readonly by: string };
  /** Set when the stored record failed its integrity check (its other fields are then unknown). */
  readonly damaged?: true;
}

/** An intent line's copy in the store. */
export interface IntentCopy {
  readonly chain: string;
  readonly seq: number;
  /** The line; '' when the copy failed its integrity check. */
  readonly line: string;
  /** The stored size, for reports. */
  readonly bytes: number;
}

/** A run of a chain's lines kept in the store: the file they went to, and the lines ('\n' between). */
export interface LineRun {
  readonly chain: string;
  readonly seq: number;
  readonly file: number;
  readonly lines: string;
}

/** The runs kept in the store, in chain and seq order, and those that failed their integrity check. */
export interface StoredRuns {
  readonly runs: LineRun[];
  readonly damaged: { readonly chain: string; readonly seq: number }[];
}

/** The store counts fewer audit chains than this host has seen: it was put back from an older copy. */
export class AuditRollbackError extends Error {
  constructor(
    readonly stored: number,
    readonly seen: number,
  ) {
    super(
      `the store records ${stored} audit chains, fewer than the ${seen} this host has seen: the store or its audit records were put back from an older copy, and the chains started since are gone. Coffer does not start on it (verify reports the gap); to serve from it anyway, start once with coffer serve --accept-rollback (recorded in the audit log)`,
    );
    this.name = 'AuditRollbackError';
  }
}

/** How often a start looks at the store's chain count before refusing it as put back, and the pause between looks. */
const ROLLBACK_LOOKS = 3;
const ROLLBACK_LOOK_MS = 150;

export class AuditRecords {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    /** Where this host keeps the greatest chain count it has seen (high-water.ts); null: nowhere. */
    private readonly seen: HighWater | null = null,
  ) {}

  /**
   * Records that chain `chain` (format 2) started at `at`, written by `writer`, with the next ordinal; one
   * transaction with the count. Returns the count of chains now.
   */
  async started(
    chain: string,
    at: number,
    writer: ChainWriter,
    acceptRollback = false,
  ): Promise<{ count: number; rolledBack?: { stored: number; seen: number } }> {
    // A count below what this host has seen is looked at again before it is believed: a sibling process
    // starting at the same moment records its count just after its commit, and a view of the store taken
    // as that commit lands can be one behind (seen once in CI with two workers on a new LMDB store). A
    // store put back from an older copy stays behind; a racing sibling's commit does not.
    for (let look = 1; ; look++) {
      try {
        return await this.start(chain, at, writer, acceptRollback);
      } catch (err) {
        if (!(err instanceof AuditRollbackError) || look >= ROLLBACK_LOOKS) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, ROLLBACK_LOOK_MS * look));
    }
  }

  private async start(
    chain: string,
    at: number,
    writer: ChainWriter,
    acceptRollback: boolean,
  ): Promise<{ count: number; rolledBack?: { stored: number; seen: number } }> {
    const key = auditChainKey(chain);
    let rolledBack: { stored: number; seen: number } | undefined;
    const count = await this.storage.atomic([AUDIT_COUNT_KEY], ([counted]) => {
      const stored = this.countIn(counted);
      // Read inside the transaction: a sibling records its count only after its commit, which this
      // transaction sees.
      const seen = this.chainCountSeen() ?? 0;
      // A count below what this host has seen: the store (or its audit records) was put back from an
      // older copy, and counting on would hide the chains it lost. Refused, unless the operator accepts it
      // for this start — then the ordinals go on from what the host has seen, so the lost chains stay a gap
      // that verify reports.
      if (stored < seen) {
        if (!acceptRollback) throw new AuditRollbackError(stored, seen);
        rolledBack = { stored, seen };
      }
      const ordinal = Math.max(stored, seen) + 1;
      const record: ChainRecord = {
        chain,
        started_at: new Date(at).toISOString(),
        last_checkpoint: null,
        format: 2,
        ordinal,
        writer,
      };
      return {
        writes: [
          { op: 'put', key, value: this.seal.seal('audit-chain', key, record) },
          {
            op: 'put',
            key: AUDIT_COUNT_KEY,
            value: this.seal.authenticate('audit-count', AUDIT_COUNT_KEY, packUint32(ordinal)),
          },
        ],
        result: ordinal,
      };
    });
    this.seen?.record([count]);
    return rolledBack ? { count, rolledBack } : { count };
  }

  /** The greatest chain count this host has seen (null where it keeps none). */
  chainCountSeen(): number | null {
    return this.seen?.seen()?.[0] ?? null;
  }

  /** How many chains the store has started (the ordinals' end); throws RecordIntegrityError if damaged. */
  async chainCount(): Promise<number> {
    return this.countIn(await this.storage.get(AUDIT_COUNT_KEY));
  }

  private countIn(bytes: Uint8Array | undefined): number {
    return bytes === undefined
      ? 0
      : unpackUint32(this.seal.verified('audit-count', AUDIT_COUNT_KEY, bytes));
  }

  /**
   * Records that chain `chain` ended at seq `seq` (`by`: "close", or the chain of the start that closed it),
   * unless its record says so already.
   */
  async closed(chain: string, seq: number, by = 'close'): Promise<void> {
    const key = auditChainKey(chain);
    await this.storage.atomic([key], ([current]) => {
      if (!current) return { writes: [], result: undefined };
      let record: ChainRecord;
      try {
        record = this.seal.open<ChainRecord>('audit-chain', key, current);
      } catch (err) {
        if (err instanceof RecordIntegrityError) return { writes: [], result: undefined };
        throw err;
      }
      if (record.closed) return { writes: [], result: undefined };
      const closed = { seq, at: new Date().toISOString(), by };
      return {
        writes: [
          { op: 'put', key, value: this.seal.seal('audit-chain', key, { ...record, closed }) },
        ],
        result: undefined,
      };
    });
  }

  /** Records a checkpoint unless a newer one is already recorded; a damaged record is left for verify to report. */
  async checkpointed(chain: string, checkpoint: ChainCheckpoint): Promise<void> {
    const key = auditChainKey(chain);
    await this.storage.atomic([key], ([current]) => {
      let record: ChainRecord = {
        chain,
        started_at: new Date().toISOString(),
        last_checkpoint: null,
      };
      if (current) {
        try {
          record = this.seal.open<ChainRecord>('audit-chain', key, current);
        } catch (err) {
          if (err instanceof RecordIntegrityError) return { writes: [], result: undefined };
          throw err;
        }
      }
      if (record.last_checkpoint && record.last_checkpoint.seq >= checkpoint.seq)
        return { writes: [], result: undefined };
      return {
        writes: [
          {
            op: 'put',
            key,
            value: this.seal.seal('audit-chain', key, { ...record, last_checkpoint: checkpoint }),
          },
        ],
        result: undefined,
      };
    });
  }

  /** Every chain the store records; one that fails its integrity check is listed as damaged. */
  async chains(): Promise<ChainRecord[]> {
    const out: ChainRecord[] = [];
    for await (const entry of this.storage.scan(AUDIT_CHAINS_RANGE)) {
      try {
        out.push(this.seal.open<ChainRecord>('audit-chain', entry.key, entry.value));
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
        out.push({
          chain: Buffer.from(entry.key).toString('latin1', 1),
          started_at: '',
          last_checkpoint: null,
          damaged: true,
        });
      }
    }
    return out;
  }

  /** The write that stores intent `seq` of `chain`'s exact line with the change it names. */
  intentCopy(chain: string, seq: number, line: string): StorageWrite {
    const key = intentJournalKey(chain, seq);
    return { op: 'put', key, value: this.seal.authenticate('intent-copy', key, Buffer.from(line)) };
  }

  /** Every intent copy in the store, in chain and seq order (a damaged or forged one with line ''). */
  async intentCopies(): Promise<IntentCopy[]> {
    const copies: IntentCopy[] = [];
    for await (const { key, value } of this.storage.scan(INTENT_JOURNAL_RANGE)) {
      let line = '';
      try {
        line = this.seal.verified('intent-copy', key, value).toString('utf8');
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
      }
      copies.push({ ...parseIntentJournalKey(key), line, bytes: value.byteLength });
    }
    return copies;
  }

  /** Deletes intent copies, in one transaction (deleting one that was never stored is harmless). */
  async deleteIntentCopies(copies: readonly { chain: string; seq: number }[]): Promise<void> {
    if (copies.length === 0) return;
    await this.storage.atomic([], () => ({
      writes: copies.map((c) => ({ op: 'delete' as const, key: intentJournalKey(c.chain, c.seq) })),
      result: undefined,
    }));
  }

  /**
   * Stores runs of lines (one record per run, written again with more lines after a failed store) in one
   * durable write without locks: only their chain's writer writes these keys.
   */
  async storeRuns(runs: readonly Omit<LineRun, 'chain'>[], chain: string): Promise<void> {
    await this.storage.putOwn(
      runs.map((run) => {
        const key = auditLinesKey(chain, run.seq);
        return {
          key,
          value: this.seal.seal('audit-lines', key, { file: run.file, lines: run.lines }),
        };
      }),
    );
  }

  /**
   * The runs of lines kept in the store (of chain `only` alone when given), opened; those that fail to open
   * are listed apart.
   */
  async storedRuns(only?: string): Promise<StoredRuns> {
    const runs: LineRun[] = [];
    const damaged: StoredRuns['damaged'] = [];
    const range = only === undefined ? AUDIT_LINES_RANGE : auditLinesRange(only);
    for await (const { key, value } of this.storage.scan(range)) {
      const { chain, seq } = parseAuditLinesKey(key);
      try {
        const run = this.seal.open<{ file: number; lines: string }>('audit-lines', key, value);
        runs.push({ chain, seq, file: run.file, lines: run.lines });
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
        damaged.push({ chain, seq });
      }
    }
    return { runs, damaged };
  }

  /** Whether the store keeps any run of `chain`'s lines (one key read, nothing opened). */
  async hasStoredLines(chain: string): Promise<boolean> {
    for await (const _ of this.storage.scan({ ...auditLinesRange(chain), limit: 1 })) return true;
    return false;
  }

  /**
   * Deletes `chain`'s runs in files up to `lastFile`, in one transaction; runs that fail their integrity
   * check are left for verify to report. Returns how many went.
   */
  async forgetRuns(chain: string, lastFile: number): Promise<number> {
    const gone: StorageWrite[] = [];
    for await (const { key, value } of this.storage.scan(auditLinesRange(chain))) {
      try {
        if (this.seal.open<{ file: number }>('audit-lines', key, value).file <= lastFile)
          gone.push({ op: 'delete', key });
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
      }
    }
    if (gone.length > 0) await this.storage.atomic([], () => ({ writes: gone, result: undefined }));
    return gone.length;
  }
}
