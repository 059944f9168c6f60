/**
 * The store's record of every audit chain: when it started and its newest checkpoint (seq, line hash,
 * file number). Verification compares the files against it, so removing a chain's files, or cutting a
 * file back past its newest checkpoint, is detected even though the cut-away lines are gone. The records
 * are sealed with their storage keys bound in (store/record-seal.ts): one that fails to open — changed,
 * moved, or written by hand to roll a checkpoint back — is listed as damaged, and verification fails on it.
 */
import type { StorageBackend } from '../storage/backend.js';
import { AUDIT_CHAINS_RANGE, auditChainKey } from '../storage/layout.js';
import { RecordIntegrityError, type RecordSeal } from '../store/record-seal.js';

export interface ChainCheckpoint {
  readonly seq: number;
  readonly hash: string;
  readonly file: number;
}

export interface ChainRecord {
  readonly chain: string;
  readonly started_at: string;
  readonly last_checkpoint: ChainCheckpoint | null;
  /** Set when the stored record failed its integrity check (its other fields are then unknown). */
  readonly damaged?: true;
}

export class AuditRegistry {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
  ) {}

  async started(chain: string, at: number): Promise<void> {
    const key = auditChainKey(chain);
    const record: ChainRecord = {
      chain,
      started_at: new Date(at).toISOString(),
      last_checkpoint: null,
    };
    await this.storage.atomic([], () => ({
      writes: [{ op: 'put', key, value: this.seal.seal('audit-chain', key, record) }],
      result: undefined,
    }));
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
}
