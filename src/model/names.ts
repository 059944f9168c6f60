/**
 * Names in the key-value space. A namespace is 1..16 segments joined by '/', a key is one segment, and a
 * segment is 1..128 of [A-Za-z0-9._-] other than '.' and '..'. Because segments cannot hold '/', '%',
 * control characters or anything outside ASCII, the storage layout (store/layout.ts) can use the bytes
 * 0x00..0x02 as separators and still sort by code point.
 */

export const MAX_NAMESPACE_SEGMENTS = 16;
export const MAX_SEGMENT_LENGTH = 128;
/** The key name that would collide with the `/versions` sub-path. */
export const RESERVED_KEY = 'versions';

const SEGMENT = /^[A-Za-z0-9._-]{1,128}$/;

export function isSegment(text: string): boolean {
  return SEGMENT.test(text) && text !== '.' && text !== '..';
}

/** The segments of a namespace, or null when `text` is not a valid namespace. */
export function namespaceSegments(text: string): string[] | null {
  const segments = text.split('/');
  if (segments.length > MAX_NAMESPACE_SEGMENTS) return null;
  return segments.every(isSegment) ? segments : null;
}

export function isNamespace(text: string): boolean {
  return namespaceSegments(text) !== null;
}

/** True when `ns` is `ancestor` itself or lies beneath it. */
export function isWithin(ns: string, ancestor: string): boolean {
  return (
    ns === ancestor ||
    (ns.length > ancestor.length && ns.startsWith(ancestor) && ns[ancestor.length] === '/')
  );
}
