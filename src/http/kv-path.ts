/**
 * The path after /v1/kv/, read raw (before any percent-decoding). Every segment must already be a valid
 * name, so `%2F`, `%2E%2E`, empty segments and control characters are refused with 400.
 */
import { invalid } from '../errors.js';
import { isSegment, MAX_NAMESPACE_SEGMENTS } from '../model/names.js';

export interface KvPath {
  readonly segments: readonly string[];
  /** The path ended with '/', which marks a namespace listing. */
  readonly trailingSlash: boolean;
}

const PREFIX = '/v1/kv';

export function parseKvPath(raw: string): KvPath {
  let rest = raw.slice(PREFIX.length);
  if (rest.startsWith('/')) rest = rest.slice(1);
  const trailingSlash = rest.endsWith('/');
  if (trailingSlash) rest = rest.slice(0, -1);
  if (rest === '') throw invalid('a namespace is required: /v1/kv/{namespace}[/{key}]');
  const segments = rest.split('/');
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
  return { segments, trailingSlash };
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
