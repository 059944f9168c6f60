/**
 * Listing a namespace: the keys directly in it, then its child namespaces, each sorted by code point,
 * as one paged stream. Only what the caller may list is shown: a key whose latest type the caller may
 * not list is left out, and a child namespace appears only if the caller could list at least one key
 * in it or beneath it.
 *
 * Cost: keys are read in order from a prefix cursor; child namespaces are found by seeking past each
 * child's whole subtree, so a page costs O(page size) seeks, plus, for callers whose rights do not cover a
 * whole child subtree, a scan of that subtree that stops at the first visible key.
 */
import type { Principal } from '../auth/principal.js';
import { forbidden } from '../errors.js';
import type { StorageBackend } from '../storage/backend.js';
import {
  childOf,
  descendantsRange,
  keysRange,
  parseMetaKey,
  subtreeRange,
} from '../storage/layout.js';
import type { RecordSeal } from '../store/record-seal.js';
import { type Cursor, decodeCursor, encodeCursor } from './cursor.js';
import { unpackMeta } from './records.js';

export interface Listing {
  readonly namespace: string;
  readonly keys: string[];
  readonly namespaces: string[];
  readonly next_cursor: string | null;
}

export async function listNamespace(
  storage: StorageBackend,
  seal: RecordSeal,
  caller: Principal,
  namespace: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<Listing> {
  if (!caller.access.mayBeneath('list', namespace))
    throw forbidden(`list in or beneath ${namespace}`);
  const start: Cursor | undefined =
    page.cursor === undefined ? undefined : decodeCursor(namespace, page.cursor);
  const want = page.limit + 1; // one more than a page tells whether another page follows
  const keys: string[] = [];
  const namespaces: string[] = [];

  if (start === undefined || start.phase === 'keys') {
    for await (const entry of storage.scan(keysRange(namespace, start?.after))) {
      const { key } = parseMetaKey(entry.key);
      if (caller.access.may('list', namespace, unpackMeta(seal, entry.key, entry.value).type))
        keys.push(key);
      if (keys.length === want) break;
    }
  }
  let after = start?.phase === 'namespaces' ? start.after : undefined;
  while (keys.length + namespaces.length < want) {
    const child = await nextChild(storage, namespace, after);
    if (child === undefined) break;
    if (await childVisible(storage, seal, caller, `${namespace}/${child}`)) namespaces.push(child);
    after = child;
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
  return { namespace, keys, namespaces, next_cursor: next && encodeCursor(namespace, next) };
}

async function nextChild(
  storage: StorageBackend,
  namespace: string,
  after: string | undefined,
): Promise<string | undefined> {
  for await (const entry of storage.scan({ ...descendantsRange(namespace, after), limit: 1 }))
    return childOf(namespace, entry.key);
  return undefined;
}

async function childVisible(
  storage: StorageBackend,
  seal: RecordSeal,
  caller: Principal,
  child: string,
): Promise<boolean> {
  if (caller.access.mayEverywhereBeneath('list', child)) return true;
  if (!caller.access.mayBeneath('list', child)) return false;
  for await (const entry of storage.scan(subtreeRange(child))) {
    if (
      caller.access.may(
        'list',
        parseMetaKey(entry.key).namespace,
        unpackMeta(seal, entry.key, entry.value).type,
      )
    )
      return true;
  }
  return false;
}

/** True when any key lies in `namespace` or beneath it. */
export async function namespaceExists(
  storage: StorageBackend,
  namespace: string,
): Promise<boolean> {
  for await (const _ of storage.scan({ ...subtreeRange(namespace), limit: 1 })) return true;
  return false;
}
