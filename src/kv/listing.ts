/**
 * Listing a namespace: the keys directly in it, then its child namespaces, each sorted by code point,
 * as one paged stream (only the names that start with `prefix`, when one is given: a range of the store,
 * not a filter of what was read); the root ('', GET /v1/kv/) has only child namespaces: the top-level ones.
 * Only what the caller may list is shown: a key whose latest type the caller may not list is left out, and
 * a child namespace appears only if the caller could list at least one key in it or beneath it. A key
 * deleted by its time (KeyMeta.deleteAfter) is left out as a deleted one is; its namespace is still named
 * among its parent's to a caller who may list everything beneath it (who is not scanned for: see
 * docs/vault-compatibility.md) until the key is written, undeleted or destroyed.
 *
 * Cost: keys are read in order from a prefix cursor; the page's child namespaces are found in one storage
 * call (StorageBackend.segments: one query on PostgreSQL, a seek past each child's whole subtree on LMDB),
 * so a page costs one query, two where it holds both keys and namespaces — plus, for callers whose rights
 * do not cover a whole child subtree, a scan of each such subtree that stops at the first visible key.
 */
import type { Principal } from '../auth/principal.js';
import { forbidden } from '../errors.js';
import type { ValueType } from '../model/value-types.js';
import { expiredAt } from '../store/kv-format.js';
import type { KvRecords } from '../store/kv-records.js';
import { type Cursor, decodeCursor, encodeCursor } from './cursor.js';
import { iso } from './entries.js';

export interface Listing {
  readonly kind: 'listing';
  readonly namespace: string;
  readonly keys: string[];
  readonly namespaces: string[];
  readonly next_cursor: string | null;
  /** With details: each listed key's latest version, in the order of `keys` (a key deleted meanwhile is left out). */
  readonly details?: KeyDetail[];
}

/** What a listing with details says of a key: what its version list says of the latest version, no value. */
export interface KeyDetail {
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  readonly created_at: string;
}

export async function listNamespace(
  records: KvRecords,
  caller: Principal,
  namespace: string,
  page: {
    limit: number;
    cursor?: string | undefined;
    prefix?: string | undefined;
    details?: boolean;
  },
  /** Now: a key whose latest version's time to be deleted has come is deleted (KeyMeta.deleteAfter). */
  now: number,
): Promise<Listing> {
  const prefix = page.prefix ?? '';
  // The root ('') holds no key; everyone may list it and sees the top-level namespaces they could list in.
  if (namespace !== '' && !caller.access.mayBeneath('list', namespace))
    throw forbidden(`list in or beneath ${namespace}`);
  const start: Cursor | undefined =
    page.cursor === undefined ? undefined : decodeCursor(namespace, page.cursor, prefix);
  const want = page.limit + 1; // one more than a page tells whether another page follows
  const keys: string[] = [];
  const namespaces: string[] = [];

  if (namespace !== '' && (start === undefined || start.phase === 'keys')) {
    for await (const { key, meta } of records.keysIn(namespace, start?.after, prefix)) {
      if (caller.access.may('list', namespace, meta.type) && expiredAt(meta, now) === undefined)
        keys.push(key);
      if (keys.length === want) break;
    }
  }
  let after = start?.phase === 'namespaces' ? start.after : undefined;
  while (keys.length + namespaces.length < want) {
    const wanted = want - keys.length - namespaces.length;
    const children = await records.children(namespace, after, wanted, prefix);
    for (const child of children)
      if (
        await childVisible(records, caller, namespace === '' ? child : `${namespace}/${child}`, now)
      )
        namespaces.push(child);
    if (children.length < wanted) break;
    after = children[children.length - 1];
  }

  let next: Cursor | null = null;
  if (keys.length + namespaces.length === want) {
    if (namespaces.length > 0) namespaces.pop();
    else keys.pop();
    next =
      namespaces.length > 0
        ? { phase: 'namespaces', after: namespaces[namespaces.length - 1]! }
        : { phase: 'keys', after: keys[keys.length - 1]! };
  }
  return {
    kind: 'listing',
    namespace,
    keys,
    namespaces,
    next_cursor: next && encodeCursor(namespace, next, prefix),
    ...(page.details ? { details: await keyDetails(records, caller, namespace, keys, now) } : {}),
  };
}

/**
 * The latest version of each key, read together (one statement on PostgreSQL), as the version list tells
 * it: the version, its type and when it was written. Nothing is opened: no value is read.
 */
async function keyDetails(
  records: KvRecords,
  caller: Principal,
  namespace: string,
  keys: readonly string[],
  now: number,
): Promise<KeyDetail[]> {
  const found = await records.latestMany(namespace, keys);
  const details: KeyDetail[] = [];
  for (const [i, key] of keys.entries()) {
    const latest = found[i];
    // Deleted since the scan, or now of a type the caller may not list: left out.
    if (!latest || !caller.access.may('list', namespace, latest.meta.type)) continue;
    if (expiredAt(latest.meta, now) !== undefined) continue;
    const version = latest.meta.latest;
    const record = latest.record ?? (await records.version({ namespace, key }, version));
    if (!record) throw records.versionError({ namespace, key }, version, 'does not parse');
    details.push({
      key,
      version,
      type: record.type,
      created_at: iso(record.createdAt),
    });
  }
  return details;
}

async function childVisible(
  records: KvRecords,
  caller: Principal,
  child: string,
  now: number,
): Promise<boolean> {
  if (caller.access.mayEverywhereBeneath('list', child)) return true;
  if (!caller.access.mayBeneath('list', child)) return false;
  for await (const { namespace, meta } of records.subtree(child))
    if (caller.access.may('list', namespace, meta.type) && expiredAt(meta, now) === undefined)
      return true;
  return false;
}
