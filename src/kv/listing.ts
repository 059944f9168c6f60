/**
 * Listing a namespace: the keys directly in it, then its child namespaces, each sorted by code point,
 * as one paged stream. Only what the caller may list is shown: a key whose latest type the caller may
 * not list is left out, and a child namespace appears only if the caller could list at least one key
 * in it or beneath it.
 *
 * Cost: keys are read in order from a prefix cursor; the page's child namespaces are found in one storage
 * call (StorageBackend.segments: one query on PostgreSQL, a seek past each child's whole subtree on LMDB),
 * so a page costs one query, two where it holds both keys and namespaces — plus, for callers whose rights
 * do not cover a whole child subtree, a scan of each such subtree that stops at the first visible key.
 */
import type { Principal } from '../auth/principal.js';
import { forbidden } from '../errors.js';
import type { StorageBackend } from '../storage/backend.js';
import { descendantsRange, keysRange, parseMetaKey, subtreeRange } from '../storage/layout.js';
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
    const wanted = want - keys.length - namespaces.length;
    const children = await childrenOf(storage, namespace, after, wanted);
    for (const child of children)
      if (await childVisible(storage, seal, caller, `${namespace}/${child}`))
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
  return { namespace, keys, namespaces, next_cursor: next && encodeCursor(namespace, next) };
}

/** The next `limit` child namespaces of `namespace` after `after`, whatever lies in them: one storage call. */
async function childrenOf(
  storage: StorageBackend,
  namespace: string,
  after: string | undefined,
  limit: number,
): Promise<string[]> {
  const range = descendantsRange(namespace, after);
  const segments = await storage.segments(descendantsRange(namespace).start, { ...range, limit });
  return segments.map((segment) => Buffer.from(segment).toString('latin1'));
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
