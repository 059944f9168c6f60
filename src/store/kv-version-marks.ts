/**
 * Deleting, undeleting and destroying versions one by one (Vault's `delete|undelete|destroy {versions}`),
 * marked on the key's index (store/kv-format.ts), live or in the trash, in one transaction:
 * - delete marks a version deleted (now, over a mark for a time still to come): it stays stored and is not
 *   read until undeleted. Naming the latest version of a live key deletes the key (it goes to the trash,
 *   as a delete of the key does);
 * - undelete takes the mark off — a mark for a time to be deleted too (KeyMeta.deleteAfter), as Vault's
 *   undelete clears it. Naming the latest version of a deleted key brings the key back (not when that
 *   version is destroyed: there is nothing to read), as it does a live key deleted by its time;
 * - destroy erases the version's record and marks it destroyed, keeping when it was written and its type.
 *   Naming the latest version of a live key also deletes the key: its latest version cannot be read.
 * A version the key does not keep (never written, pruned, destroyed) is left as it is, as Vault does.
 */
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { keyEvent, withEvents } from './event-log.js';
import type { KeyringHolder } from './keyring-store.js';
import {
  type DestroyedVersion,
  type KeyMeta,
  type KeyRef,
  MARKED_VERSIONS_LIMIT,
  packCounter,
  packMeta,
  packTrashed,
  type TrashedKey,
  unpackTrashed,
  unpackVersion,
} from './kv-format.js';
import { counterKey, metaKey, trashKey, versionKey } from './layout.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

export type VersionsAction = 'delete' | 'undelete' | 'destroy';

/** What an action on versions did. */
export interface VersionsOutcome {
  /** The versions it changed, in order (those already as asked, or not kept, are not here). */
  readonly changed: number[];
  /** The key went to the trash (its latest version deleted or destroyed), or came back from it. */
  readonly key?: 'deleted' | 'restored';
  /** The key's index after it, and whether the key is live (else in the trash). */
  readonly meta: KeyMeta;
  readonly live: boolean;
}

/** More versions would be marked one by one than an index keeps (MARKED_VERSIONS_LIMIT). */
export class TooManyMarkedVersionsError extends Error {
  constructor() {
    super(
      `a key marks at most ${MARKED_VERSIONS_LIMIT} versions deleted or destroyed one by one: destroy the key, or let max_versions prune its oldest`,
    );
    this.name = 'TooManyMarkedVersionsError';
  }
}

export class KvVersionMarks {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly keyring: Pick<KeyringHolder, 'guard'>,
    /** A key's index from its stored bytes, checked (KvRecords's, with its cache of checked indexes). */
    private readonly openIndex: (mKey: Uint8Array, bytes: Uint8Array) => KeyMeta,
  ) {}

  /**
   * Acts on `versions` of the key, live or deleted, in one transaction. `may` throws unless the caller may
   * act on the key as it is then; undefined when there is no such key, live or deleted.
   */
  act(
    ref: KeyRef,
    action: VersionsAction,
    versions: readonly number[],
    may: (meta: KeyMeta, trashed: boolean) => void,
    alongside: readonly StorageWrite[],
    now: number,
    /** Who acts (a token id), for the change's event (store/event-log.ts). */
    actor: string,
  ): Promise<VersionsOutcome | undefined> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const dKey = trashKey(ref.namespace, ref.key);
    // Numbers past the last a version can have are versions the key does not keep.
    const asked = [...new Set(versions)]
      .filter((v) => Number.isInteger(v) && v >= 1 && v <= 0xffff_ffff)
      .sort((a, b) => a - b);
    // Destroying keeps when each version was written and its type: their records are read with the index.
    const vKeys =
      action === 'destroy' ? asked.map((v) => versionKey(ref.namespace, ref.key, v)) : [];
    const acting = withEvents(
      { seal: this.seal, storage: this.storage },
      [mKey, dKey, ...vKeys],
      ([metaBytes, trashBytes, ...records]) => {
        const live = metaBytes ? this.openIndex(mKey, metaBytes) : undefined;
        // A write or an undelete empties the key's place in the trash: both at once were put there by hand.
        if (live && trashBytes)
          throw new RecordIntegrityError('kv-trash', printableKey(dKey), 'is beside a live index');
        const trashed: TrashedKey | undefined =
          live || !trashBytes ? undefined : unpackTrashed(this.seal, dKey, trashBytes);
        const meta = live ?? trashed;
        if (!meta) return { writes: [], result: undefined };
        may(meta, live === undefined);
        const deleted = new Map(meta.deletedVersions);
        const destroyed = new Map<number, DestroyedVersion>(meta.destroyedVersions);
        const kept = (v: number) => v >= meta.first && v <= meta.latest && !destroyed.has(v);
        const changed: number[] = [];
        const writes: StorageWrite[] = [];
        let key: VersionsOutcome['key'];
        asked.forEach((v, i) => {
          if (!kept(v)) return;
          const latest = v === meta.latest;
          if (action === 'destroy') {
            const record = records[i] && unpackVersion(records[i]);
            if (!record)
              throw new RecordIntegrityError(
                'kv-version',
                printableKey(vKeys[i]!),
                'is missing or does not parse',
              );
            destroyed.set(v, { createdAt: record.createdAt, type: record.type });
            deleted.delete(v);
            writes.push({ op: 'delete', key: vKeys[i]! });
            changed.push(v);
            if (latest && live) key = 'deleted';
          } else if (latest) {
            // The latest version is the key's own: deleting it deletes the key, undeleting it restores it
            // (and takes off the mark of a time to be deleted, as Vault's undelete clears it).
            if (action === 'delete' && live) key = 'deleted';
            else if (action === 'undelete' && trashed) key = 'restored';
            else if (action !== 'undelete' || !deleted.has(v)) return;
            deleted.delete(v);
            changed.push(v);
          } else if (action === 'delete' && (deleted.get(v) ?? Number.POSITIVE_INFINITY) > now) {
            // Not deleted yet (a mark for a time still to come counts as none): deleted now.
            deleted.set(v, now);
            changed.push(v);
          } else if (action === 'undelete' && deleted.delete(v)) changed.push(v);
        });
        if (deleted.size + destroyed.size > MARKED_VERSIONS_LIMIT)
          throw new TooManyMarkedVersionsError();
        const {
          deletedVersions: _deleted,
          destroyedVersions: _destroyed,
          deletedAt: _at,
          ...index
        } = meta as KeyMeta & { deletedAt?: number };
        const after: KeyMeta = {
          ...index,
          ...(deleted.size > 0 ? { deletedVersions: deleted } : {}),
          ...(destroyed.size > 0 ? { destroyedVersions: destroyed } : {}),
        };
        const cKey = counterKey(ref.namespace, ref.key);
        if (key === 'deleted')
          writes.push(
            { op: 'delete', key: mKey },
            { op: 'put', key: cKey, value: packCounter(this.seal, cKey, meta.latest) },
            {
              op: 'put',
              key: dKey,
              value: packTrashed(this.seal, dKey, { ...after, deletedAt: now }),
            },
          );
        else if (key === 'restored')
          writes.push(
            { op: 'put', key: mKey, value: packMeta(this.seal, mKey, after) },
            { op: 'delete', key: dKey },
          );
        else if (changed.length > 0 && live)
          writes.push({ op: 'put', key: mKey, value: packMeta(this.seal, mKey, after) });
        else if (changed.length > 0 && trashed)
          writes.push({
            op: 'put',
            key: dKey,
            value: packTrashed(this.seal, dKey, { ...after, deletedAt: trashed.deletedAt }),
          });
        const nowLive = key === 'restored' || (key === undefined && live !== undefined);
        const operation =
          key === 'deleted' ? 'delete' : key === 'restored' ? 'undelete' : 'versions';
        const event = {
          ...keyEvent(operation, ref, meta, actor),
          versions: { action, of: changed },
        };
        return {
          writes: [...writes, ...alongside],
          result: { changed, ...(key ? { key } : {}), meta: after, live: nowLive },
          events: changed.length > 0 ? [event] : [],
        };
      },
    );
    return this.storage.atomic(...acting);
  }
}
