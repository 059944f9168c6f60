/**
 * The store's record of every audit chain: when it started and its newest checkpoint (seq, line hash,
 * file number). Verification compares the files against it, so removing a chain's files, or cutting a
 * file back past its newest checkpoint, is detected even though the cut-away lines are gone.
 */
import type { StorageBackend } from '../storage/backend.js';
import { AUDIT_CHAINS_RANGE, auditChainKey } from '../storage/layout.js';

export interface ChainCheckpoint {
  readonly seq: number;
  readonly hash: string;
  readonly file: number;
}

export interface ChainRecord {
  readonly chain: string;
  readonly started_at: string;
  readonly last_checkpoint: ChainCheckpoint | null;
}

export class AuditRegistry {
  constructor(private readonly storage: StorageBackend) {}

  async started(chain: string, at: number): Promise<void> {
    const record: ChainRecord = { chain, started_at: new Date(at).toISOString(), last_checkpoint: null };
    await this.storage.atomic([], () => ({ writes: [{ op: 'put', key: auditChainKey(chain), value: Buffer.from(JSON.stringify(record)) }], result: undefined }));
  }

  /** Records a checkpoint unless a newer one is already recorded. */
  async checkpointed(chain: string, checkpoint: ChainCheckpoint): Promise<void> {
    const key = auditChainKey(chain);
    await this.storage.atomic([key], ([current]) => {
      const record = current ? (JSON.parse(Buffer.from(current).toString('utf8')) as ChainRecord) : { chain, started_at: new Date().toISOString(), last_checkpoint: null };
      if (record.last_checkpoint && record.last_checkpoint.seq >= checkpoint.seq) return { writes: [], result: undefined };
      return { writes: [{ op: 'put', key, value: Buffer.from(JSON.stringify({ ...record, last_checkpoint: checkpoint })) }], result: undefined };
    });
  }

  async chains(): Promise<ChainRecord[]> {
    const out: ChainRecord[] = [];
    for await (const entry of this.storage.scan(AUDIT_CHAINS_RANGE)) out.push(JSON.parse(Buffer.from(entry.value).toString('utf8')) as ChainRecord);
    return out;
  }
}
