/**
 * A key's own metadata (its free string fields), the most versions it keeps and whether its writes must
 * name the version they replace (check-and-set), on its index
 * (store/kv-format.ts): set in one transaction; a write beyond the limit prunes (kv-version-writes.ts).
 */
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import type { KeyringHolder } from './keyring-store.js';
import { type KeyMeta, type KeyRef, packMeta } from './kv-format.js';
import { metaKey } from './layout.js';
import type { RecordSeal } from './record-seal.js';

export class KvKeyMetadata {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly keyring: Pick<KeyringHolder, 'guard'>,
    /** A key's index from its stored bytes, checked (KvRecords's, with its cache of checked indexes). */
    private readonly openIndex: (mKey: Uint8Array, bytes: Uint8Array) => KeyMeta,
  ) {}

  /**
   * Sets the key's own metadata in one transaction: `custom` replaces its map when given ({} empties it),
   * `maxVersions` its limit (0: none; the next write prunes beyond it), `casRequired` whether every write
   * must name the version it replaces. `may` throws unless the caller may
   * change the key as it is then; undefined when there is no such (live) key, else its index now.
   */
  set(
    ref: KeyRef,
    change: {
      readonly custom?: Readonly<Record<string, string>>;
      readonly maxVersions?: number;
      readonly casRequired?: boolean;
    },
    may: (meta: KeyMeta) => void,
    alongside: readonly StorageWrite[],
  ): Promise<KeyMeta | undefined> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    return this.storage.atomic([mKey], ([metaBytes]) => {
      if (!metaBytes) return { writes: [], result: undefined };
      const now = this.openIndex(mKey, metaBytes);
      may(now);
      const { custom: _custom, maxVersions: _max, casRequired: _cas, ...index } = now;
      const custom = change.custom ?? now.custom;
      const maxVersions = change.maxVersions ?? now.maxVersions;
      const casRequired = change.casRequired ?? now.casRequired === true;
      const meta: KeyMeta = {
        ...index,
        ...(custom && Object.keys(custom).length > 0 ? { custom } : {}),
        ...(maxVersions ? { maxVersions } : {}),
        ...(casRequired ? { casRequired: true as const } : {}),
      };
      return {
        writes: [{ op: 'put', key: mKey, value: packMeta(this.seal, mKey, meta) }, ...alongside],
        result: meta,
      };
    });
  }
}
