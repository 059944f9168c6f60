/**
 * What a write needs the right for, beyond writing: a lifecycle setting that erases needs the right to
 * delete, and a version records whether its writer could read every value beside it.
 */
import type { Principal } from '../auth/principal.js';
import { forbidden } from '../errors.js';
import { VALUE_TYPES } from '../model/value-types.js';
import type { KeyMeta } from '../store/kv-format.js';

/**
 * Whether `caller` may read every value of `namespace`, of both types: recorded with each version it writes
 * (RecordIdentity.writerReadsAll). `coffer run` and `coffer export` let such a version's value take any
 * variable name: its writer gains nothing by running code with the values beside it (docs/cli.md).
 */
export function readsAll(caller: Principal, namespace: string): boolean {
  return VALUE_TYPES.every((type) => caller.access.may('read', namespace, type));
}

/**
 * Throws 403 unless `caller` may set this metadata on a key as it is now (`meta`): the right to write its
 * type, and to delete it for a limit or a time that erases more than the key's do now.
 */
export function requireMetadataRights(
  caller: Principal,
  namespace: string,
  meta: Pick<KeyMeta, 'type' | 'maxVersions' | 'deleteAfter'>,
  maxVersions: number | undefined,
  deleteAfter: number | undefined,
): void {
  if (!caller.access.may('write', namespace, meta.type))
    throw forbidden(`write ${meta.type} keys in ${namespace}`);
  // A limit that prunes, or a time that deletes, is a deletion: it needs the right to delete.
  const erases = lifecycleErases(meta, maxVersions, deleteAfter);
  if (erases && !caller.access.may('delete', namespace, meta.type))
    throw forbidden(`delete ${meta.type} keys in ${namespace} (to ${erases})`);
}

/**
 * What a change of a key's lifecycle would erase that its settings now do not, said for a refusal; undefined
 * when it erases nothing more. A lower limit (or one where there was none) destroys the oldest versions at
 * the next write; a shorter time (or one where there was none) deletes each new version. Doing either
 * directly (DELETE …?destroy=true, DELETE) needs the right to delete, so setting it does too: a writer may
 * raise or remove a limit or a time, never tighten one.
 */
export function lifecycleErases(
  now: Pick<KeyMeta, 'maxVersions' | 'deleteAfter'>,
  maxVersions: number | undefined,
  deleteAfter: number | undefined,
): string | undefined {
  const tighter = (to: number | undefined, from: number | undefined): boolean =>
    to !== undefined && to > 0 && (!from || to < from);
  if (tighter(maxVersions, now.maxVersions)) return 'keep fewer versions';
  if (tighter(deleteAfter, now.deleteAfter)) return 'delete versions after a time';
  return undefined;
}
