/**
 * The client's watches, ended quietly by the caller's signal: a key's new versions, as one held request at
 * a time (the server's wait_after); and the values of one or more namespaces each time they change, all
 * followed on one change stream (GET /v1/events: events.ts), each namespace read again after a change in
 * it.
 */
import type { ApiEntry } from '../api/response-schemas.js';
import { CofferError } from './errors.js';
import type { ChangeEvent, EventsOptions } from './events.js';
import type { NamespaceValue } from './options.js';
import { keyPath, query } from './paths.js';
import type { Answer, Call } from './transport.js';

/** The calls a watch makes. */
export interface Watcher {
  get(namespace: string, key: string, options?: { signal?: AbortSignal }): Promise<ApiEntry>;
  /** A request the server may hold up to `waitSeconds` (its 304 is an answer); undefined once aborted. */
  held(
    call: Pick<Call, 'method' | 'path' | 'headers'>,
    waitSeconds: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer | undefined>;
}

/** The calls a watch of namespaces makes. */
export interface NamespacesWatcher {
  values(namespace: string, options?: { signal?: AbortSignal }): Promise<NamespaceValue[]>;
  events(options: EventsOptions): AsyncGenerator<ChangeEvent, void, undefined>;
}

/** Changes that come together (a burst of writes) are read once, after this long. */
const SETTLE_MS = 50;

/** What Coffer.watchNamespaces runs (kv-calls.ts documents it). */
export async function* watchNamespaces(
  client: NamespacesWatcher,
  namespaces: readonly string[],
  options: { signal?: AbortSignal } = {},
): AsyncGenerator<Map<string, NamespaceValue[]>, void, undefined> {
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  /** Namespaces changed since they were last read: all of them, first. */
  const touched = new Set(namespaces);
  let failed: unknown;
  let wake: (() => void) | undefined;
  const woken = () => {
    wake?.();
    wake = undefined;
  };
  let started!: () => void;
  const open = new Promise<void>((resolve) => {
    started = resolve;
  });
  // The stream first, the values after it has opened: a change between the two is read again, never lost.
  const follow = async (): Promise<void> => {
    for (;;) {
      try {
        for await (const event of client.events({
          namespaces,
          signal,
          onStart: () => started(),
        })) {
          if (event.kind === 'kv') touched.add(event.namespace);
          woken();
        }
        return;
      } catch (err) {
        // Too long away (the events were pruned): read everything again and follow from now.
        if (err instanceof CofferError && err.code === 'events_expired' && !signal.aborted) {
          for (const ns of namespaces) touched.add(ns);
          woken();
          continue;
        }
        failed = err;
        started();
        woken();
        return;
      }
    }
  };
  const following = follow();
  try {
    await open;
    const latest = new Map<string, NamespaceValue[]>();
    let shown = '';
    while (!signal.aborted) {
      if (failed !== undefined) throw failed;
      if (touched.size > 0) {
        const now = [...touched];
        touched.clear();
        for (const ns of now) latest.set(ns, await client.values(ns, { signal }));
        const text = JSON.stringify(namespaces.map((ns) => latest.get(ns)));
        if (text !== shown) {
          shown = text;
          yield new Map(latest);
        }
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  } finally {
    stop.abort();
    await following;
  }
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

/** What Coffer.watchValues runs (kv-calls.ts documents it): one namespace's values, on the stream. */
export async function* watchNamespaceValues(
  client: NamespacesWatcher,
  namespace: string,
  options: { signal?: AbortSignal } = {},
): AsyncGenerator<NamespaceValue[], void, undefined> {
  for await (const all of watchNamespaces(client, [namespace], options))
    yield all.get(namespace) ?? [];
}
