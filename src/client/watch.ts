/**
 * The client's watches: a key's new versions, and a namespace's values each time they change, each as one
 * held request at a time (the server's wait_after and If-None-Match with timeout), ended quietly by the
 * caller's signal.
 */
import type { ApiEntry, ApiNamespaceValues } from '../api/response-schemas.js';
import { CofferError } from './errors.js';
import type { NamespaceValue, PageOptions } from './options.js';
import { keyPath, namespacePath, query } from './paths.js';
import type { Answer, Call } from './transport.js';

/** The calls a watch makes. */
export interface Watcher {
  get(namespace: string, key: string, options?: { signal?: AbortSignal }): Promise<ApiEntry>;
  valuesPage(namespace: string, options?: PageOptions): Promise<ApiNamespaceValues>;
  /** A request the server may hold up to `waitSeconds` (its 304 is an answer); undefined once aborted. */
  held(
    call: Pick<Call, 'method' | 'path' | 'headers'>,
    waitSeconds: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer | undefined>;
}

/** What Coffer.watch runs (kv-calls.ts documents it). */
export async function* watchKey(
  client: Watcher,
  namespace: string,
  key: string,
  options: { after?: number; waitSeconds?: number; signal?: AbortSignal } = {},
): AsyncGenerator<ApiEntry, void, undefined> {
  const wait = options.waitSeconds ?? 30;
  let after = options.after;
  if (after === undefined) {
    try {
      const now = await client.get(namespace, key, {
        ...(options.signal ? { signal: options.signal } : {}),
      });
      yield now;
      after = now.version;
    } catch (err) {
      if (!(err instanceof CofferError && err.status === 404)) throw err;
      after = 0; // wait for it to be created
    }
  }
  while (!options.signal?.aborted) {
    const answer = await client.held(
      {
        method: 'GET',
        path: keyPath(namespace, key) + query({ wait_after: after, timeout: `${wait}s` }),
      },
      wait,
      options.signal,
    );
    if (answer === undefined) return;
    if (answer.status === 304) continue;
    const entry = answer.body as ApiEntry;
    after = entry.version;
    yield entry;
  }
}

/** What Coffer.watchValues runs (kv-calls.ts documents it). */
export async function* watchNamespaceValues(
  client: Watcher,
  namespace: string,
  options: { waitSeconds?: number; signal?: AbortSignal } = {},
): AsyncGenerator<NamespaceValue[], void, undefined> {
  const wait = options.waitSeconds ?? 30;
  let etag: string | undefined;
  while (!options.signal?.aborted) {
    const answer = await client.held(
      {
        method: 'GET',
        path: `/v1/kv/${namespacePath(namespace)}/${query({ values: true, timeout: etag === undefined ? undefined : `${wait}s` })}`,
        ...(etag === undefined ? {} : { headers: { 'if-none-match': etag } }),
      },
      wait,
      options.signal,
    );
    if (answer === undefined) return;
    if (answer.status === 304) continue;
    etag = answer.headers.get('etag') ?? undefined;
    const first = answer.body as ApiNamespaceValues;
    const values = [...first.values];
    let cursor = first.next_cursor ?? undefined;
    while (cursor !== undefined) {
      const page = await client.valuesPage(namespace, {
        cursor,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      values.push(...page.values);
      cursor = page.next_cursor ?? undefined;
    }
    yield values;
  }
}
