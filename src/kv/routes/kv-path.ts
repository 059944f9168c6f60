/**
 * The path after /v1/kv/, read raw (before any percent-decoding). The one escape taken is `%2F` (or `%2f`)
 * for '/' inside the namespace, as a generated client sends a path parameter that holds slashes:
 * `/v1/kv/payments%2Fprod/db` is `/v1/kv/payments/prod/db` (decoded once). Every segment must then be a
 * valid name, so `%2E%2E`, other escapes, empty segments and control characters are refused with 400, and
 * so is `%2F` in the segment that names the key (`keyUnencoded`).
 */
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
    const decoded = ENCODED_SLASH.test(part) ? part.split(ENCODED_SLASH) : [part];
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
