/**
 * Listing cursors: opaque to clients, base64url of the namespace listed, the name prefix asked for (when
 * one was), the phase (keys, then child namespaces) and the last name returned. A cursor for another
 * namespace or another prefix, or one that does not decode, is refused with 400.
 */
import { invalid } from '../errors.js';
import { isSegment } from '../model/names.js';

export interface Cursor {
  readonly phase: 'keys' | 'namespaces';
  readonly after: string;
}

export function encodeCursor(namespace: string, cursor: Cursor, prefix = ''): string {
  return Buffer.from(
    JSON.stringify({
      n: namespace,
      ...(prefix === '' ? {} : { x: prefix }),
      p: cursor.phase === 'keys' ? 'k' : 'n',
      a: cursor.after,
    }),
  ).toString('base64url');
}

/** 400: `cursor` is not one this listing gave. */
export function invalidCursor() {
  return invalid('invalid cursor', [
    { field: '/cursor', in: 'query', message: 'is not a cursor returned by this listing' },
  ]);
}

/** A trash listing's cursor: the namespace and the last deleted key returned. */
export function encodeTrashCursor(namespace: string, after: string): string {
  return Buffer.from(JSON.stringify({ n: namespace, t: 1, a: after })).toString('base64url');
}

export function decodeTrashCursor(namespace: string, text: string): string {
  let d: { n?: unknown; t?: unknown; a?: unknown } | null;
  try {
    d = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (d === null || typeof d !== 'object' || d.n !== namespace || d.t !== 1) throw invalidCursor();
  if (typeof d.a !== 'string' || !isSegment(d.a)) throw invalidCursor();
  return d.a;
}

export function decodeCursor(namespace: string, text: string, prefix = ''): Cursor {
  const bad = invalidCursor();
  let data: unknown;
  try {
    data = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad;
  }
  const d = data as { n?: unknown; x?: unknown; p?: unknown; a?: unknown };
  if (
    typeof d !== 'object' ||
    d === null ||
    d.n !== namespace ||
    (d.x ?? '') !== prefix ||
    (d.p !== 'k' && d.p !== 'n') ||
    typeof d.a !== 'string' ||
    !isSegment(d.a) ||
    !d.a.startsWith(prefix)
  ) {
    throw bad;
  }
  return { phase: d.p === 'k' ? 'keys' : 'namespaces', after: d.a };
}
