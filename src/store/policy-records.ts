/**
 * The policy document in storage (`Spolicies`): the runtime roles and login roles as one sealed record
 * (kind `policies`, its storage key bound in), so that a change to several of them is one write and every
 * process learns all of it with one read. Its generation grows with every change; a process that has read
 * generation N refuses an older document put back afterwards (a replay that would bring back a deleted role
 * or a wider grant): it is reported like a damaged record, and the process keeps what it had.
 *
 * A document that fails to open is reported and never used; until a good one is read, the process keeps the
 * last good one it had (none at start-up: only the built-in and configured roles, and no login role, work).
 */
import { EMPTY_POLICIES, type PolicyDocument } from '../model/policies.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { POLICIES_KEY as KEY } from './layout.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

/** What a change decides from the current document: the new one, or why not (thrown after the transaction). */
export type PolicyChange<T> = (
  current: PolicyDocument,
) => { readonly document: PolicyDocument; readonly result: T } | { readonly refused: Error };

export class PolicyRecords {
  private lastBytes: Buffer | undefined;
  private last: PolicyDocument = EMPTY_POLICIES;

  constructor(
    private readonly storage: Pick<StorageBackend, 'get' | 'atomic'>,
    private readonly seal: RecordSeal,
    /** Told of a document that fails to open or is older than one read before. */
    private readonly onIntegrityError: (error: RecordIntegrityError) => void,
  ) {}

  /** The document as stored now, or the last good one when the stored one fails its checks (reported). */
  async current(): Promise<PolicyDocument> {
    const bytes = await this.storage.get(KEY);
    if (!bytes) return this.last;
    if (this.lastBytes && Buffer.compare(this.lastBytes, bytes) === 0) return this.last;
    try {
      const document = this.open(bytes);
      this.remember(bytes, document);
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      this.onIntegrityError(err);
    }
    return this.last;
  }

  /**
   * Applies `change` to the stored document in one transaction, with `alongside` (the audit intent), and
   * resolves to its result; a refusal writes nothing and is thrown. A document that fails its checks is
   * thrown as RecordIntegrityError: nothing is changed on top of a damaged or replayed one.
   */
  async update<T>(change: PolicyChange<T>, alongside: readonly StorageWrite[] = []): Promise<T> {
    let refused: Error | undefined;
    let written: { bytes: Uint8Array; document: PolicyDocument } | undefined;
    const result = await this.storage.atomic([KEY], ([stored]) => {
      refused = undefined;
      written = undefined;
      const current = stored ? this.open(stored) : EMPTY_POLICIES;
      const decided = change(current);
      if ('refused' in decided) {
        refused = decided.refused;
        return { writes: [], result: undefined };
      }
      const document = { ...decided.document, generation: current.generation + 1 };
      const bytes = this.seal.seal('policies', KEY, document);
      written = { bytes, document };
      return {
        writes: [{ op: 'put', key: KEY, value: bytes }, ...alongside],
        result: decided.result,
      };
    });
    if (refused) throw refused;
    if (written) this.remember(written.bytes, written.document);
    return result as T;
  }

  private open(bytes: Uint8Array): PolicyDocument {
    const document = this.seal.open<PolicyDocument>('policies', KEY, bytes);
    if (document.generation < this.last.generation)
      throw new RecordIntegrityError(
        'policies',
        printableKey(KEY),
        `is generation ${document.generation}, older than generation ${this.last.generation} read before (an older copy put back?)`,
      );
    return document;
  }

  private remember(bytes: Uint8Array, document: PolicyDocument): void {
    if (document.generation < this.last.generation) return;
    this.lastBytes = Buffer.from(bytes);
    this.last = document;
  }
}
