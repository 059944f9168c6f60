/**
 * A key's own metadata (its free string fields), the most versions it keeps and whether its writes must
 * name the version they replace (check-and-set), on its index (or its trash record)
 * (store/kv-format.ts): set in one transaction; a write beyond the limit prunes (kv-version-writes.ts).
 */

import type { ValueType } from '../model/value-types.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { keyEvent, withEvents } from './event-log.js';
import type { KeyringHolder } from './keyring-store.js';
import {
  type KeyMeta,
  type KeyRef,
  packMeta,
  packTrashed,
  type TrashedKey,
  unpackCounter,
  unpackTrashed,
} from './kv-format.js';
import { counterKey, metaKey, trashKey } from './layout.js';
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
   * must name the version it replaces, `deleteAfter` how long after it is written each new version is
   * deleted (0: never; versions written before keep the time they were marked for, as in Vault). A live key's index takes it; a deleted key's trash record keeps it
   * for when it comes back or is written again. With `create` and no such key, the metadata is kept before
   * its first version (as Vault keeps metadata alone): a trash record holding no version, numbered on from
   * the key's counter, which the key's next write takes on. `may` throws unless the caller may change the key
   * as it is then; undefined when there is no such key (and nothing was created), else its index now.
   */
  set(
    ref: KeyRef,
    change: {
      readonly custom?: Readonly<Record<string, string>>;
      readonly maxVersions?: number;
      readonly casRequired?: boolean;
      readonly deleteAfter?: number;
    },
    may: (meta: KeyMeta) => void,
    alongside: readonly StorageWrite[],
    /** Who changes it (a token id), for its event (store/event-log.ts). */
    actor: string,
    create?: { readonly type: ValueType; readonly at: number },
  ): Promise<KeyMeta | undefined> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const dKey = trashKey(ref.namespace, ref.key);
    const cKey = counterKey(ref.namespace, ref.key);
    const setting = withEvents(
      { seal: this.seal, storage: this.storage },
      [mKey, dKey, cKey],
      ([metaBytes, trashBytes, counterBytes]) => {
        const live = metaBytes && this.openIndex(mKey, metaBytes);
        const trashed =
          live || !trashBytes ? undefined : unpackTrashed(this.seal, dKey, trashBytes);
        let now: KeyMeta | TrashedKey | undefined = live ?? trashed;
        if (!now && create) {
          // No version yet: the range from the next number on is empty until the first write.
          const counter = unpackCounter(this.seal, cKey, counterBytes);
          now = { latest: counter, first: counter + 1, type: create.type, deletedAt: create.at };
        }
        if (!now) return { writes: [], result: undefined };
        may(now);
        const {
          custom: _custom,
          maxVersions: _max,
          casRequired: _cas,
          deleteAfter: _after,
          ...index
        } = now;
        const custom = change.custom ?? now.custom;
        const maxVersions = change.maxVersions ?? now.maxVersions;
        const casRequired = change.casRequired ?? now.casRequired === true;
        const deleteAfter = change.deleteAfter ?? now.deleteAfter;
        const meta = {
          ...index,
          ...(custom && Object.keys(custom).length > 0 ? { custom } : {}),
          ...(maxVersions ? { maxVersions } : {}),
          ...(casRequired ? { casRequired: true as const } : {}),
          ...(deleteAfter ? { deleteAfter } : {}),
        };
        const write: StorageWrite = live
          ? { op: 'put', key: mKey, value: packMeta(this.seal, mKey, meta) }
          : { op: 'put', key: dKey, value: packTrashed(this.seal, dKey, meta as TrashedKey) };
        return {
          writes: [write, ...alongside],
          result: meta,
          events: [keyEvent('metadata', ref, meta, actor)],
        };
      },
    );
    return this.storage.atomic(...setting);
  }
}
