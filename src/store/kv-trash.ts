/**
 * The trash of the key-value records (store/kv-records.ts): a deleted key's index kept as it was, with when
 * it was deleted (`D`, MACed with its storage key bound, store/layout.ts), beside its versions. Moving a
 * key there, restoring it, and destroying a key (live or deleted) are each one transaction; a write to a
 * deleted key takes it out of the trash in its own (KvRecords.append).
 */
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { keyEvent, withEvents } from './event-log.js';
import type { KeyringHolder } from './keyring-store.js';
import {
  type KeyMeta,
  type KeyRef,
  packCounter,
  packMeta,
  packTrashed,
  type TrashedKey,
  unpackTrashed,
} from './kv-format.js';
import { counterKey, metaKey, parseMetaKey, trashKey, trashRange, versionKey } from './layout.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

export class KvTrash {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly keyring: Pick<KeyringHolder, 'guard'>,
    /** A key's index from its stored bytes, checked (KvRecords's, with its cache of checked indexes). */
    private readonly openIndex: (mKey: Uint8Array, bytes: Uint8Array) => KeyMeta,
  ) {}

  /**
   * Deletes the key in one transaction: its index goes to the trash with `deletedAt`, its last version
   * number to its counter (what a write after numbers on from), and its versions stay. `mayDelete` throws
   * unless the caller may delete the key as it is then; false when there is no such key (or it is deleted).
   */
  move(
    ref: KeyRef,
    mayDelete: (meta: KeyMeta) => void,
    alongside: readonly StorageWrite[],
    deletedAt: number,
    /** Who deletes it (a token id), for its event (store/event-log.ts). */
    actor: string,
  ): Promise<boolean> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const cKey = counterKey(ref.namespace, ref.key);
    const dKey = trashKey(ref.namespace, ref.key);
    return this.storage.atomic(
      ...withEvents({ seal: this.seal, storage: this.storage }, [mKey], ([metaBytes]) => {
        if (!metaBytes) return { writes: [], result: false };
        const meta = this.openIndex(mKey, metaBytes);
        mayDelete(meta);
        const writes: StorageWrite[] = [
          { op: 'delete', key: mKey },
          { op: 'put', key: cKey, value: packCounter(this.seal, cKey, meta.latest) },
          { op: 'put', key: dKey, value: packTrashed(this.seal, dKey, { ...meta, deletedAt }) },
          ...alongside,
        ];
        return { writes, result: true, events: [keyEvent('delete', ref, meta, actor)] };
      }),
    );
  }

  /**
   * Takes a deleted key out of the trash in one transaction: its index as it was (its latest version no
   * longer marked for a time to be deleted: undeleted, as Vault's undelete clears it), its versions as they
   * are. `mayRestore` throws unless the caller may; undefined when the key is not in the trash.
   */
  restore(
    ref: KeyRef,
    mayRestore: (trashed: TrashedKey) => void,
    alongside: readonly StorageWrite[],
    /** Who restores it (a token id), for its event (store/event-log.ts). */
    actor: string,
  ): Promise<KeyMeta | undefined> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const dKey = trashKey(ref.namespace, ref.key);
    const restoring = withEvents(
      { seal: this.seal, storage: this.storage },
      [mKey, dKey],
      ([metaBytes, trashBytes]) => {
        if (!trashBytes) return { writes: [], result: undefined };
        const trashed = unpackTrashed(this.seal, dKey, trashBytes);
        // A write empties the key's place in the trash: both at once were put there by hand.
        if (metaBytes)
          throw new RecordIntegrityError('kv-trash', printableKey(dKey), 'is beside a live index');
        mayRestore(trashed);
        const { deletedAt: _deletedAt, ...meta } = withoutLatestMark(trashed);
        return {
          writes: [
            { op: 'put', key: mKey, value: packMeta(this.seal, mKey, meta) },
            { op: 'delete', key: dKey },
            ...alongside,
          ],
          result: meta,
          events: [keyEvent('undelete', ref, meta, actor)],
        };
      },
    );
    return this.storage.atomic(...restoring);
  }

  /**
   * Destroys the key in one transaction, live or deleted: its versions, its index and its trash record
   * are erased; its last version number goes to its counter, so a new life of the key numbers on from it.
   * `mayDestroy` throws unless the caller may; false when there is no such key, live or deleted.
   */
  destroy(
    ref: KeyRef,
    mayDestroy: (meta: KeyMeta, trashed: boolean) => void,
    alongside: readonly StorageWrite[],
    /** Who destroys it (a token id), for its event (store/event-log.ts). */
    actor: string,
  ): Promise<boolean> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const cKey = counterKey(ref.namespace, ref.key);
    const dKey = trashKey(ref.namespace, ref.key);
    const destroying = withEvents(
      { seal: this.seal, storage: this.storage },
      [mKey, dKey],
      ([metaBytes, trashBytes]) => {
        const meta: KeyMeta | undefined = metaBytes
          ? this.openIndex(mKey, metaBytes)
          : trashBytes && unpackTrashed(this.seal, dKey, trashBytes);
        if (!meta) return { writes: [], result: false };
        mayDestroy(meta, !metaBytes);
        const writes: StorageWrite[] = [
          { op: 'delete', key: metaBytes ? mKey : dKey },
          { op: 'put', key: cKey, value: packCounter(this.seal, cKey, meta.latest) },
          ...alongside,
        ];
        for (let v = meta.first; v <= meta.latest; v++)
          writes.push({ op: 'delete', key: versionKey(ref.namespace, ref.key, v) });
        return { writes, result: true, events: [keyEvent('destroy', ref, meta, actor)] };
      },
    );
    return this.storage.atomic(...destroying);
  }

  /** The deleted key's record, or undefined when the key is not in the trash. */
  async get(ref: KeyRef): Promise<TrashedKey | undefined> {
    this.keyring.guard();
    const dKey = trashKey(ref.namespace, ref.key);
    const bytes = await this.storage.get(dKey);
    return bytes && unpackTrashed(this.seal, dKey, bytes);
  }

  /** The deleted keys directly in `namespace`, in order from just after `after`, with their records. */
  async *keysIn(
    namespace: string,
    after?: string,
  ): AsyncIterable<{ key: string; trashed: TrashedKey }> {
    this.keyring.guard();
    for await (const entry of this.storage.scan(trashRange(namespace, after)))
      yield {
        key: parseMetaKey(entry.key).key,
        trashed: unpackTrashed(this.seal, entry.key, entry.value),
      };
  }
}

/** `meta` without the mark on its latest version: that version read again, for good. */
export function withoutLatestMark<T extends KeyMeta>(meta: T): T {
  if (!meta.deletedVersions?.has(meta.latest)) return meta;
  const { deletedVersions, ...rest } = meta;
  const kept = new Map(deletedVersions);
  kept.delete(meta.latest);
  return (kept.size > 0 ? { ...rest, deletedVersions: kept } : rest) as T;
}
