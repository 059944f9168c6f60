/**
 * Deleting a key, and what follows from it: the trash (store/kv-trash.ts). A delete moves the key there —
 * it reads and lists as absent, its versions are kept —; undelete brings it back as it was; destroy erases
 * a key, live or deleted, for good; the trash of a namespace is listed. Each needs the right to delete
 * keys of the key's type, checked before anything is read that could tell a forbidden caller what exists,
 * and again under the change's lock.
 */
import type { Principal } from '../auth/principal.js';
import { AppError, forbidden, notFound } from '../errors.js';
import type { ValueType } from '../model/value-types.js';
import { expiredAt, type KeyMeta, type KeyRef, type TrashedKey } from '../store/kv-format.js';
import { TooManyMarkedVersionsError, type VersionsAction } from '../store/kv-version-marks.js';
import { decodeTrashCursor, encodeTrashCursor } from './cursor.js';
import { type EntryInfo, iso, type TrashListing, type VersionsChange } from './entries.js';
import { expectVersion } from './expect-version.js';
import type { BeforeCommit, KvServiceDeps } from './kv-deps.js';

export class Deletions {
  constructor(private readonly deps: KvServiceDeps) {}

  /** The key's index (a RecordIntegrityError, answered 500, when it fails its check). */
  private meta(namespace: string, key: string): Promise<KeyMeta | undefined> {
    return this.deps.records.index({ namespace, key });
  }

  /**
   * Deletes the key: it reads and lists as absent from now on, its versions are kept in the trash until
   * it is destroyed (or written again, which takes them on), and undelete brings it back as it was.
   */
  async remove(
    caller: Principal,
    namespace: string,
    key: string,
    beforeCommit?: BeforeCommit,
    ifVersion?: number,
  ): Promise<void> {
    if (!caller.access.mayInNamespace('delete', namespace))
      throw forbidden(`delete in ${namespace}`);
    const found = await this.meta(namespace, key);
    // A key deleted by its time is deleted already, as one in the trash is.
    const expired = found && expiredAt(found, this.deps.now());
    const meta = found && expired === undefined ? found : undefined;
    if (!meta) {
      // A precondition on a key that is not there fails (RFC 9110, If-Match): 412, not 404.
      if (ifVersion !== undefined) expectVersion(ifVersion, 0);
      // Deleted already: said as a read says it (when, to a caller who may list its type), not "no such key".
      const trashed =
        found && expired !== undefined
          ? { ...found, deletedAt: expired }
          : await this.deps.records.trash.get({ namespace, key });
      throw trashed ? deletedKey(caller, namespace, trashed) : notFound('no such key');
    }
    mayDelete(caller, namespace, meta.type);
    const alongside = (await beforeCommit?.()) ?? [];
    const removed = await this.deps.records.trash.move(
      { namespace, key },
      (now) => {
        mayDelete(caller, namespace, now.type);
        expectVersion(ifVersion, now.latest);
      },
      alongside,
      this.deps.now(),
      caller.id,
    );
    if (!removed) {
      if (ifVersion !== undefined) expectVersion(ifVersion, 0);
      throw notFound('no such key');
    }
    this.deps.changes?.changed({ namespace, key });
  }

  /**
   * Erases the key for good, live or deleted: every version, its index, its place in the trash. Its last
   * version number stays in its counter, so numbers are never reused. With `ifVersion`, only while the
   * key is live at that version (0: only a deleted key).
   */
  async destroy(
    caller: Principal,
    namespace: string,
    key: string,
    beforeCommit?: BeforeCommit,
    ifVersion?: number,
  ): Promise<void> {
    if (!caller.access.mayInNamespace('delete', namespace))
      throw forbidden(`delete in ${namespace}`);
    const ref = { namespace, key };
    const meta = (await this.meta(namespace, key)) ?? (await this.deps.records.trash.get(ref));
    if (!meta) throw notFound('no such key, live or deleted');
    mayDelete(caller, namespace, meta.type);
    const alongside = (await beforeCommit?.()) ?? [];
    const destroyed = await this.deps.records.trash.destroy(
      ref,
      (now, trashed) => {
        mayDelete(caller, namespace, now.type);
        expectVersion(ifVersion, trashed ? 0 : now.latest);
      },
      alongside,
      caller.id,
    );
    if (!destroyed) throw notFound('no such key, live or deleted');
    this.deps.changes?.changed(ref);
  }

  /**
   * Brings a deleted key back as it was when deleted: its latest version is read again (and, deleted by its
   * time, is no longer marked for one).
   */
  async undelete(
    caller: Principal,
    namespace: string,
    key: string,
    beforeCommit?: BeforeCommit,
  ): Promise<EntryInfo> {
    if (!caller.access.mayInNamespace('delete', namespace))
      throw forbidden(`undelete in ${namespace}`);
    const ref = { namespace, key };
    const trashed = await this.deps.records.trash.get(ref);
    if (!trashed) return this.undeleteExpired(caller, namespace, key, beforeCommit);
    if (!keepsVersions(trashed)) throw notFound('no deleted key by that name');
    const mayRestore = (now: TrashedKey): void => {
      if (!keepsVersions(now)) throw notFound('no deleted key by that name');
      mayDelete(caller, namespace, now.type, 'undelete');
      if (now.destroyedVersions?.has(now.latest))
        throw new AppError(
          'conflict',
          `the key's latest version (${now.latest}) is destroyed: write a new version, or undelete an older one by number`,
        );
    };
    mayRestore(trashed);
    const alongside = (await beforeCommit?.()) ?? [];
    const meta = await this.deps.records.trash.restore(ref, mayRestore, alongside, caller.id);
    if (!meta) throw notFound('no deleted key by that name');
    return this.restored(ref, meta.latest);
  }

  /** Undelete of a live key deleted by its time: its latest version's mark taken off. */
  private async undeleteExpired(
    caller: Principal,
    namespace: string,
    key: string,
    beforeCommit?: BeforeCommit,
  ): Promise<EntryInfo> {
    const meta = await this.meta(namespace, key);
    if (!meta || expiredAt(meta, this.deps.now()) === undefined)
      throw notFound('no deleted key by that name');
    mayDelete(caller, namespace, meta.type, 'undelete');
    const alongside = (await beforeCommit?.()) ?? [];
    const ref = { namespace, key };
    const outcome = await this.deps.records.marks.act(
      ref,
      'undelete',
      [meta.latest],
      (now, trashed) => {
        // Written, deleted or undeleted meanwhile: not the key deleted by its time that was asked for.
        if (trashed || now.latest !== meta.latest || !now.deletedVersions?.has(now.latest))
          throw notFound('no deleted key by that name');
        mayDelete(caller, namespace, now.type, 'undelete');
      },
      alongside,
      this.deps.now(),
      caller.id,
    );
    if (!outcome) throw notFound('no deleted key by that name');
    return this.restored(ref, meta.latest);
  }

  /** What an undelete answers: the key's latest version, read again (waiters told of the change). */
  private async restored(ref: KeyRef, latest: number): Promise<EntryInfo> {
    this.deps.changes?.changed(ref);
    const record = await this.deps.records.version(ref, latest);
    if (!record) throw this.deps.records.versionError(ref, latest, 'is missing or does not parse');
    return {
      namespace: ref.namespace,
      key: ref.key,
      version: latest,
      type: record.type,
      created_at: iso(record.createdAt),
    };
  }

  /**
   * Deletes, undeletes or destroys `versions` of the key one by one, live or deleted
   * (store/kv-version-marks.ts): naming its latest version deletes the key (undeleting: restores it). A
   * version the key does not keep is left as it is. Needs the right to delete keys of its type.
   */
  async versions(
    caller: Principal,
    namespace: string,
    key: string,
    action: VersionsAction,
    versions: readonly number[],
    beforeCommit?: BeforeCommit,
  ): Promise<VersionsChange> {
    const verb = action === 'undelete' ? 'undelete' : 'delete';
    if (!caller.access.mayInNamespace('delete', namespace))
      throw forbidden(`${verb} in ${namespace}`);
    const ref = { namespace, key };
    const meta = (await this.meta(namespace, key)) ?? (await this.deps.records.trash.get(ref));
    if (!meta) throw notFound('no such key, live or deleted');
    mayDelete(caller, namespace, meta.type, verb);
    const alongside = (await beforeCommit?.()) ?? [];
    const outcome = await this.deps.records.marks
      .act(
        ref,
        action,
        versions,
        (now) => mayDelete(caller, namespace, now.type, verb),
        alongside,
        this.deps.now(),
        caller.id,
      )
      .catch((err: unknown) => {
        if (err instanceof TooManyMarkedVersionsError)
          throw new AppError('invalid_request', err.message);
        throw err;
      });
    if (!outcome) throw notFound('no such key, live or deleted');
    if (outcome.changed.length > 0) this.deps.changes?.changed(ref);
    return {
      namespace,
      key,
      action,
      versions: outcome.changed,
      key_state: outcome.live ? 'live' : 'deleted',
    };
  }

  /**
   * A page of the keys deleted directly in `namespace` (its trash, and the keys deleted by their time),
   * oldest name first: those of a type the caller may list, with their latest version and when they were
   * deleted; never a value. (Those deleted by their time are found among the namespace's live keys: the
   * trash view reads all of them.)
   */
  async list(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<TrashListing> {
    if (!caller.access.mayInNamespace('list', namespace)) throw forbidden(`list in ${namespace}`);
    const after = page.cursor === undefined ? undefined : decodeTrashCursor(namespace, page.cursor);
    const keys: TrashListing['keys'] = [];
    let more = false;
    const deleted = byName(
      this.deps.records.trash.keysIn(namespace, after),
      expiredIn(this.deps.records.keysIn(namespace, after), this.deps.now()),
    );
    for await (const { key, trashed } of deleted) {
      if (!caller.access.may('list', namespace, trashed.type) || !keepsVersions(trashed)) continue;
      if (keys.length === page.limit) {
        more = true;
        break;
      }
      keys.push({
        key,
        type: trashed.type,
        version: trashed.latest,
        deleted_at: iso(trashed.deletedAt),
      });
    }
    return {
      kind: 'trash',
      namespace,
      keys,
      next_cursor: more ? encodeTrashCursor(namespace, keys.at(-1)!.key) : null,
    };
  }
}

/** The keys of `live` deleted by their time (KeyMeta.deleteAfter), as the trash lists a key. */
async function* expiredIn(
  live: AsyncIterable<{ key: string; meta: KeyMeta }>,
  now: number,
): AsyncIterable<{ key: string; trashed: TrashedKey }> {
  for await (const { key, meta } of live) {
    const at = expiredAt(meta, now);
    if (at !== undefined) yield { key, trashed: { ...meta, deletedAt: at } };
  }
}

/** Two lists of keys in the store's order (code points: UTF-8 bytes) as one, in that order. */
async function* byName<T extends { key: string }>(
  a: AsyncIterable<T>,
  b: AsyncIterable<T>,
): AsyncIterable<T> {
  const [ia, ib] = [a[Symbol.asyncIterator](), b[Symbol.asyncIterator]()];
  let [na, nb] = await Promise.all([ia.next(), ib.next()]);
  try {
    while (!na.done || !nb.done) {
      const takeA =
        !na.done &&
        (nb.done || Buffer.compare(Buffer.from(na.value.key), Buffer.from(nb.value.key)) <= 0);
      if (takeA) {
        yield na.value;
        na = await ia.next();
      } else if (!nb.done) {
        yield nb.value;
        nb = await ib.next();
      }
    }
  } finally {
    await Promise.all([ia.return?.(), ib.return?.()]);
  }
}

/** Deleting, destroying and undeleting a key need the right to delete keys of its type. */
function mayDelete(caller: Principal, namespace: string, type: ValueType, verb = 'delete'): void {
  if (!caller.access.may('delete', namespace, type))
    throw forbidden(`${verb} ${type} keys in ${namespace}`);
}

/** False for a key kept for its metadata alone, before its first version (KvKeyMetadata.set's create). */
export function keepsVersions(meta: KeyMeta): boolean {
  return meta.first <= meta.latest;
}

export function isTrashed(meta: KeyMeta | TrashedKey): meta is TrashedKey {
  return (meta as Partial<TrashedKey>).deletedAt !== undefined;
}

/** A deleted key's 404: when it was deleted, to a caller who may list keys of its type. */
export function deletedKey(caller: Principal, namespace: string, trashed: TrashedKey): AppError {
  if (!caller.access.may('list', namespace, trashed.type) || !keepsVersions(trashed))
    return notFound('no such key');
  return new AppError('not_found', 'the key is deleted', undefined, undefined, {
    deleted_at: iso(trashed.deletedAt),
  });
}
