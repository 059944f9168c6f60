/** The key-value calls: read, write, delete, list, a namespace's values, and the watches (watch.ts). */
import type {
  ApiEntry,
  ApiEntryInfo,
  ApiKeyMetadata,
  ApiListing,
  ApiNamespaceValues,
  ApiTrashListing,
  ApiVersionList,
  ApiVersionsChange,
} from '../api/response-schemas.js';
import { Calls } from './calls.js';
import { type ChangeEvent, type EventsOptions, eventsQuery, followEvents } from './events.js';
import type { ListOptions, NamespaceValue, PageOptions, ValueType } from './options.js';
import { keyPath, namespacePath, query } from './paths.js';
import { watchKey, watchNamespaces, watchNamespaceValues } from './watch.js';

export class KvCalls extends Calls {
  /** The latest version of the key, or `version`. */
  get(
    namespace: string,
    key: string,
    options: { version?: number; signal?: AbortSignal } = {},
  ): Promise<ApiEntry> {
    return this.call({
      method: 'GET',
      path: keyPath(namespace, key) + query({ version: options.version }),
      signal: options.signal,
    });
  }

  /**
   * Stores a new version (a secret unless `type` says config). `ifVersion`: only if the key's latest
   * version is that one (0: only if it does not exist), else a CofferError 412 with `currentVersion`.
   */
  async put(
    namespace: string,
    key: string,
    value: string,
    options: { type?: ValueType; ifVersion?: number; signal?: AbortSignal } = {},
  ): Promise<ApiEntryInfo & { created: boolean }> {
    const answer = await this.answer({
      method: 'PUT',
      path: keyPath(namespace, key) + query({ cas: options.ifVersion }),
      body: { value, type: options.type ?? 'secret' },
      signal: options.signal,
    });
    return { ...(answer.body as ApiEntryInfo), created: answer.status === 201 };
  }

  /**
   * Deletes the key: it reads as absent, its versions stay in the trash (undelete brings it back);
   * `ifVersion`: only if its latest version is that one.
   */
  async delete(
    namespace: string,
    key: string,
    options: { ifVersion?: number; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: keyPath(namespace, key) + query({ cas: options.ifVersion }),
      signal: options.signal,
    });
  }

  /** One page of the keys deleted directly in `namespace` (its trash): names and versions, no value. */
  trash(
    namespace: string,
    options: { limit?: number; cursor?: string; signal?: AbortSignal } = {},
  ): Promise<ApiTrashListing> {
    return this.call({
      method: 'GET',
      path: `/v1/kv/${namespacePath(namespace)}/${query({ trash: true, limit: options.limit, cursor: options.cursor })}`,
      signal: options.signal,
    });
  }

  /**
   * Deletes, undeletes or destroys `versions` of the key one by one, live or deleted: naming its latest
   * version deletes the key (undeleting: restores it). What changed.
   */
  changeVersions(
    namespace: string,
    key: string,
    action: 'delete' | 'undelete' | 'destroy',
    versions: readonly number[],
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiVersionsChange> {
    const list = versions.join(',');
    return this.call({
      method: action === 'undelete' ? 'POST' : 'DELETE',
      path:
        keyPath(namespace, key) +
        query(
          action === 'undelete'
            ? { undelete: true, versions: list }
            : { destroy: action === 'destroy' || undefined, versions: list },
        ),
      signal: options.signal,
    });
  }

  /**
   * Sets the key's own metadata: `custom_metadata` replaced when given, `max_versions` (0: no limit),
   * `cas_required` and `delete_version_after` (seconds; 0: never) when given. The key's metadata after it.
   */
  setMetadata(
    namespace: string,
    key: string,
    change: {
      custom_metadata?: Record<string, string>;
      max_versions?: number;
      cas_required?: boolean;
      delete_version_after?: number;
    },
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiKeyMetadata> {
    return this.call({
      method: 'PATCH',
      path: keyPath(namespace, key),
      body: change,
      signal: options.signal,
    });
  }

  /** Takes a deleted key out of the trash as it was; its latest version. */
  undelete(
    namespace: string,
    key: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiEntryInfo> {
    return this.call({
      method: 'POST',
      path: keyPath(namespace, key) + query({ undelete: true }),
      signal: options.signal,
    });
  }

  /**
   * Erases the key for good, live or deleted: every version. `ifVersion`: only if its latest version is
   * that one (0: only if it is deleted).
   */
  async destroy(
    namespace: string,
    key: string,
    options: { ifVersion?: number; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: keyPath(namespace, key) + query({ destroy: true, cas: options.ifVersion }),
      signal: options.signal,
    });
  }

  /** The key's versions, oldest first. */
  versions(
    namespace: string,
    key: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiVersionList> {
    return this.call({
      method: 'GET',
      path: `${keyPath(namespace, key)}/versions`,
      signal: options.signal,
    });
  }

  /**
   * One page of a namespace's keys and child namespaces ('' lists the top-level namespaces); with `prefix`,
   * only those whose names start with it.
   */
  list(namespace: string, options: ListOptions = {}): Promise<ApiListing> {
    const path = namespace === '' ? '/v1/kv/' : `/v1/kv/${namespacePath(namespace)}/`;
    return this.call({
      method: 'GET',
      path: path + query({ limit: options.limit, cursor: options.cursor, prefix: options.prefix }),
      signal: options.signal,
    });
  }

  /** One page of the latest values the caller may read directly in the namespace (one call). */
  valuesPage(namespace: string, options: PageOptions = {}): Promise<ApiNamespaceValues> {
    return this.call({
      method: 'GET',
      path: `/v1/kv/${namespacePath(namespace)}/${query({ values: true, limit: options.limit, cursor: options.cursor })}`,
      signal: options.signal,
    });
  }

  /** Every latest value the caller may read directly in the namespace, following the pages. */
  async values(
    namespace: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<NamespaceValue[]> {
    const all: NamespaceValue[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.valuesPage(namespace, {
        ...(cursor === undefined ? {} : { cursor }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      all.push(...page.values);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    return all;
  }

  /**
   * The key's entry now (when it exists), then each newer version as it is written: one held request at a
   * time (wait_after, up to `waitSeconds`, default 30, each), so a change arrives as soon as it is made. From
   * `after` instead, when given (yielding only versions above it). A deleted key ends it with a CofferError
   * 404; `signal` ends it quietly.
   */
  watch(
    namespace: string,
    key: string,
    options: { after?: number; waitSeconds?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<ApiEntry, void, undefined> {
    return watchKey(this.watcher(), namespace, key, options);
  }

  /**
   * Every value the caller may read directly in the namespace now, then again each time they change (a key
   * there written, added or deleted): watchNamespaces with one namespace.
   */
  watchValues(
    namespace: string,
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<NamespaceValue[], void, undefined> {
    return watchNamespaceValues(this.namespacesWatcher(), namespace, options);
  }

  /**
   * The values the caller may read directly in each of `namespaces` now (by namespace), then again each time
   * they change, all followed on one change stream (GET /v1/events): after a change, the namespaces it
   * touched are read again, and the values are yielded when they differ from the last yielded. It comes
   * back by itself after a disconnect (and reads everything again after one too long to resume from);
   * `signal` ends it quietly.
   */
  watchNamespaces(
    namespaces: readonly string[],
    options: { signal?: AbortSignal } = {},
  ): AsyncGenerator<Map<string, NamespaceValue[]>, void, undefined> {
    return watchNamespaces(this.namespacesWatcher(), namespaces, options);
  }

  /**
   * Every change the caller may read, as it is committed (GET /v1/events: client/events.ts), on one
   * connection whatever the namespaces followed: `namespaces` (patterns: `payments/*`) and `kinds` select;
   * from `after` (a position) when given, else from the next change. It comes back by itself after a
   * disconnect and resumes after the last event yielded; a position no longer kept fails with
   * `events_expired`; `signal` ends it quietly. Never a value: read the key for it.
   */
  events(options: EventsOptions = {}): AsyncGenerator<ChangeEvent, void, undefined> {
    const path = `/v1/events${eventsQuery(options)}`;
    return followEvents(
      async (last, signal) => {
        const token = await this.transport.token();
        return this.transport.fetch(this.url + path, {
          headers: {
            accept: 'text/event-stream',
            'user-agent': this.transport.userAgent,
            authorization: `Bearer ${token}`,
            ...(last === undefined ? {} : { 'last-event-id': String(last) }),
          },
          signal,
        });
      },
      options,
      this.transport.retry,
    );
  }

  /** What the watches call. */
  private watcher() {
    return { get: this.get.bind(this), held: this.held.bind(this) };
  }

  private namespacesWatcher() {
    return { values: this.values.bind(this), events: this.events.bind(this) };
  }
}
