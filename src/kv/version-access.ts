/**
 * One version of a key as a caller may have it: its read right checked for the latest type and for the
 * version's own, the version in the key's range and not deleted or destroyed alone, then opened by the
 * store (store/kv-version-reads.ts).
 */
import type { Principal } from '../auth/principal.js';
import { AppError, forbidden, notFound } from '../errors.js';
import { deletedAt, type KeyMeta, type VersionRecord } from '../store/kv-format.js';
import type { KvRecords, Latest } from '../store/kv-records.js';
import type { VersionReader } from '../store/kv-version-reads.js';
import { iso } from './entries.js';

/** Version `version` of the key, opened (a secret) or checked (a config value), for `caller`. */
export async function openVersion(
  deps: {
    readonly records: Pick<KvRecords, 'version' | 'versionError'>;
    readonly reader: VersionReader;
    readonly now: () => number;
  },
  caller: Principal,
  namespace: string,
  key: string,
  { meta, record: latestRecord }: Latest,
  version: number,
): Promise<{ record: VersionRecord; value: string }> {
  if (!caller.access.may('read', namespace, meta.type))
    throw forbidden(`read ${meta.type} values in ${namespace}`);
  if (version < meta.first || version > meta.latest) throw notFound('no such version');
  // Most keys mark no version: then no time is needed.
  const marked =
    meta.deletedVersions || meta.destroyedVersions
      ? markedVersion(caller, namespace, meta, version, deps.now())
      : undefined;
  if (marked) throw marked;
  const record: VersionRecord | undefined =
    version === meta.latest && latestRecord !== undefined
      ? latestRecord
      : await deps.records.version({ namespace, key }, version);
  if (!record)
    throw deps.records.versionError({ namespace, key }, version, 'is missing or does not parse');
  // The version's own type decides (an older version may be of another type than the latest).
  if (!caller.access.may('read', namespace, record.type))
    throw forbidden(`read ${record.type} values in ${namespace}`);
  return { record, value: await deps.reader.value({ namespace, key, version }, record) };
}

/**
 * The 404 of a version deleted or destroyed alone (store/kv-version-marks.ts), or deleted by its time,
 * saying which and (deleted) when to a caller who may list keys of its type; undefined when it is neither.
 */
export function markedVersion(
  caller: Principal,
  namespace: string,
  meta: KeyMeta,
  version: number,
  now: number,
): AppError | undefined {
  const destroyed = meta.destroyedVersions?.get(version);
  const deleted = deletedAt(meta, version, now);
  if (!destroyed && deleted === undefined) return undefined;
  if (!caller.access.may('list', namespace, destroyed?.type ?? meta.type))
    return notFound('no such version');
  return destroyed
    ? new AppError('not_found', `version ${version} is destroyed`, undefined, undefined, {
        destroyed: true,
      })
    : new AppError('not_found', `version ${version} is deleted`, undefined, undefined, {
        deleted_at: iso(deleted!),
      });
}
