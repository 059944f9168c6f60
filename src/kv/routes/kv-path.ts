/**
 * The path after /v1/kv/, read raw (before any percent-decoding). The one escape taken is `%2F` (or `%2f`)
 * for '/' inside the namespace, as a generated client sends a path parameter that holds slashes:
 * `/v1/kv/payments%2Fprod/db` is `/v1/kv/payments/prod/db` (decoded once). Every segment must then be a
 * valid name, so `%2E%2E`, other escapes, empty segments and control characters are refused with 400, and
 * so is `%2F` in the segment that names the key (`keyUnencoded`).
 */
import type { Request } from 'express';
import { rawPath } from '../../api/request-parts.js';
import { invalid } from '../../errors.js';
import { isSegment, MAX_NAMESPACE_SEGMENTS } from '../../model/names.js';

export interface KvPath {
  readonly segments: readonly string[];
  /** The path ended with '/', which marks a namespace listing. */
  readonly trailingSlash: boolean;
  /** Segments between the path's slashes before `%2F` was decoded: one names a namespace alone. */
  readonly rawSegments: number;
  /** For each segment, whether it came from a segment of the path that held `%2F`. */
  readonly encoded: readonly boolean[];
}

const ENCODED_SLASH = /%2F/i;

const PREFIX = '/v1/kv';

export function parseKvPath(raw: string): KvPath {
  let rest = raw.slice(PREFIX.length);
  if (rest.startsWith('/')) rest = rest.slice(1);
  const trailingSlash = rest.endsWith('/');
  if (trailingSlash) rest = rest.slice(0, -1);
  if (rest === '') throw invalid('a namespace is required: /v1/kv/{namespace}[/{key}]');
  const parts = rest.split('/');
  const segments: string[] = [];
  const encoded: boolean[] = [];
  for (const part of parts) {
    const decoded =
      part.includes('%') && ENCODED_SLASH.test(part) ? part.split(ENCODED_SLASH) : [part];
    for (const segment of decoded) {
      segments.push(segment);
      encoded.push(decoded.length > 1);
    }
  }
  const bad = segments.findIndex((s) => !isSegment(s));
  if (bad >= 0) {
    throw invalid(`path segment ${bad + 1} is not a valid name`, [
      {
        field: `/${bad}`,
        in: 'path',
        message: 'segments are 1 to 128 of A-Z a-z 0-9 . _ - and not . or ..',
      },
    ]);
  }
  if (segments.length > MAX_NAMESPACE_SEGMENTS + 1) {
    throw invalid(`a path has at most ${MAX_NAMESPACE_SEGMENTS} namespace segments and a key`);
  }
  return { segments, trailingSlash, rawSegments: parts.length, encoded };
}

/** Refuses a key named with `%2F` in it (only a namespace may be sent that way): `index` is the key's. */
export function keyUnencoded(path: KvPath, index: number): void {
  if (!path.encoded[index]) return;
  throw invalid('a key cannot hold %2F: only the namespace may be sent with its slashes encoded', [
    { field: `/${index}`, in: 'path', message: 'a key is one segment, sent as it is' },
  ]);
}

/** Splits a key path into namespace and key, for PUT, DELETE and reads. */
export function splitKeyPath(segments: readonly string[]): { namespace: string; key: string } {
  if (segments.length < 2) throw invalid('the path must be /v1/kv/{namespace}/{key}');
  return { namespace: segments.slice(0, -1).join('/'), key: segments[segments.length - 1]! };
}

export function namespaceOf(segments: readonly string[]): string {
  if (segments.length > MAX_NAMESPACE_SEGMENTS)
    throw invalid(`a namespace has at most ${MAX_NAMESPACE_SEGMENTS} segments`);
  return segments.join('/');
}

/** The highest version a request may name (?version, ?cas, ?wait_after, an ETag). */
export const MAX_VERSION = 0xffff_ffff;

/** The template every kv operation serves. */
export const TEMPLATE = '/v1/kv/{path}';
/** GET here (with or without a trailing slash) lists the top-level namespaces the caller may see. */
export const ROOT = '/v1/kv';

export const namespaceParam = {
  name: 'namespace',
  in: 'path',
  required: true,
  // Generated clients percent-encode path parameters: a '/' sent as %2F is taken, in the namespace only.
  description:
    "1 to 16 segments separated by /: payments/prod. Sent either as literal '/' characters or, as generated clients send a path parameter, with each '/' encoded as %2F (payments%2Fprod): the same namespace, decoded once. No other escape is taken, and a key never holds %2F (400)",
  schema: { type: 'string' },
};
export const keyParam = {
  name: 'key',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' },
};

const PARSED = Symbol('kv path');

/**
 * Each request's kv path, parsed once (the audit entry's target is read from it before the handler), and
 * kept on the request itself: with a WeakMap's entry for every request a read cost 2% more CPU (the map's
 * own upkeep and the collector's; bench:against --together, 2026-11-28).
 */
export function kvPathOf(req: Request): KvPath {
  const held = req as Request & { [PARSED]?: KvPath };
  held[PARSED] ??= parseKvPath(rawPath(req));
  return held[PARSED];
}

/**
 * What a kv path names, for the audit entry of a request refused before its handler: the namespace, and the
 * last segment as the key (a GET of `a/b` may turn out to list namespace `a/b`; a search by prefix finds it
 * either way). A path ending in `/` names a namespace.
 */
export function pathTarget(req: Request): { namespace: string; key?: string } {
  const path = kvPathOf(req);
  if (path.trailingSlash || path.segments.length < 2)
    return { namespace: namespaceOf(path.segments) };
  return {
    namespace: namespaceOf(path.segments.slice(0, -1)),
    key: path.segments.at(-1)!,
  };
}
