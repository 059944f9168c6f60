/**
 * A key's version list (GET /v1/kv/{ns}/{key}/versions), a deleted key's too: each version's type and time,
 * and what marks it — deleted alone or by its time (`deleted_at`), to be deleted at a time still to come
 * (`deletes_at`), destroyed alone —; the key's own metadata; when the key was deleted, if it is. No value.
 */
import type { Principal } from '../auth/principal.js';
import { forbidden, notFound } from '../errors.js';
import { expiredAt, type KeyMeta, type TrashedKey } from '../store/kv-format.js';
import { isTrashed, keepsVersions } from './deletions.js';
import { iso, type VersionList } from './entries.js';
import type { KvServiceDeps } from './kv-deps.js';

export async function versionList(
  deps: Pick<KvServiceDeps, 'records' | 'now'>,
  caller: Principal,
  namespace: string,
  key: string,
): Promise<VersionList> {
  if (!caller.access.mayInNamespace('list', namespace)) throw forbidden(`list in ${namespace}`);
  const meta: KeyMeta | TrashedKey | undefined =
    (await deps.records.index({ namespace, key })) ??
    (await deps.records.trash.get({ namespace, key }));
  if (!meta) throw notFound('no such key');
  if (!caller.access.may('list', namespace, meta.type))
    throw forbidden(`list ${meta.type} keys in ${namespace}`);
  const versions: VersionList['versions'] = [];
  const now = deps.now();
  for await (const { version, record } of deps.records.versions({ namespace, key })) {
    if (!record) throw deps.records.versionError({ namespace, key }, version, 'does not parse');
    const at = meta.deletedVersions?.get(version);
    versions.push({
      version,
      type: record.type,
      created_at: iso(record.createdAt),
      ...(at === undefined ? {} : at <= now ? { deleted_at: iso(at) } : { deletes_at: iso(at) }),
    });
  }
  // Those destroyed alone, from what the index keeps of them, in their place.
  for (const [version, gone] of meta.destroyedVersions ?? [])
    versions.push({ version, type: gone.type, created_at: iso(gone.createdAt), destroyed: true });
  versions.sort((a, b) => a.version - b.version);
  return {
    namespace,
    key,
    current_version: meta.latest,
    ...keyDeletion(meta, now),
    custom_metadata: meta.custom ?? {},
    max_versions: meta.maxVersions ?? 0,
    cas_required: meta.casRequired === true,
    delete_version_after: (meta.deleteAfter ?? 0) / 1000,
    versions,
  };
}

/** A deleted key's `deleted_at`: in the trash, or deleted by its time (not one kept for its metadata alone). */
function keyDeletion(meta: KeyMeta | TrashedKey, now: number): { deleted_at?: string } {
  if (isTrashed(meta)) return keepsVersions(meta) ? { deleted_at: iso(meta.deletedAt) } : {};
  const expired = expiredAt(meta, now);
  return expired === undefined ? {} : { deleted_at: iso(expired) };
}
