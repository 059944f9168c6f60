/** What the key-value service (kv-service.ts) and its deletions (deletions.ts) are built from. */
import type { KeyringHolder } from '../store/keyring-store.js';
import type { KvRecords, RecordWrite } from '../store/kv-records.js';
import type { KeyChanges } from './key-changes.js';

/** Runs just before a change (the audit intent); what it returns is committed in the change's transaction. */
export type BeforeCommit = () => Promise<readonly RecordWrite[]>;

export interface KvServiceDeps {
  readonly records: KvRecords;
  /** This process's keyring; a rotation by any process is picked up through it. */
  readonly keyring: Pick<KeyringHolder, 'current' | 'stamp' | 'refresh'>;
  readonly maxValueBytes: number;
  readonly now: () => number;
  /** Told of every change this service makes, to wake the requests waiting for it. */
  readonly changes?: KeyChanges;
}
