/**
 * A namespace's values in one call (GET /v1/kv/{ns}/?values=true): a page of the latest values the caller
 * may read, with the namespace's tag, now or once the tag moves (a wait). The keys of a page are read
 * together, each opened by the store as a single read would be.
 */
import { createHash } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { forbidden } from '../errors.js';
import { expiredAt, type KeyMeta } from '../store/kv-format.js';
import type { KvRecords } from '../store/kv-records.js';
import type { VersionReader } from '../store/kv-version-reads.js';
import { decodeCursor, encodeCursor, invalidCursor } from './cursor.js';
import { iso, type NamespaceValues, type TaggedValues } from './entries.js';
import { type KeyChanges, untilChanged, type WaitLimit } from './key-changes.js';
import { openVersion } from './version-access.js';

/**
 * A page of values ends once it holds this many bytes of values (always at least one value), so that a
 * namespace of large values is not answered in one body of up to `limit` × max_value_bytes.
 */
export const VALUES_PAGE_BYTES = 4 * 1024 * 1024;

export class NamespaceValuesReader {
  constructor(
    private readonly deps: {
      readonly records: KvRecords;
      readonly reader: VersionReader;
      readonly changes?: KeyChanges | undefined;
      readonly now: () => number;
    },
  ) {}

  /**
   * The latest values of the keys directly in `namespace` that the caller may read, in key order, a page at
   * a time (one deleted by its time, KeyMeta.deleteAfter, is left out as a deleted one is). A key whose
   * type the caller may not read is left out, and the answer does not say that it was
   * (a config reader learns nothing of the secrets beside its values). Each value is read as a single read
   * reads it — its index and newest version together, opened and checked — and one that fails its check
   * fails the whole call (500), never a page without it. The reads of a page are asked for together: on
   * PostgreSQL they go as one statement (storage/read-batch.ts).
   */
  async values(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<TaggedValues> {
    if (!caller.access.mayInNamespace('read', namespace)) throw forbidden(`read in ${namespace}`);
    return this.valuesOf(caller, namespace, page, await this.readableKeys(caller, namespace, page));
  }

  /**
   * The keys of the page whose latest type the caller may read, with their versions (one more than a page
   * tells whether another page follows), and the page's tag: a digest of those keys and versions.
   */
  private async readableKeys(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ keys: { key: string; version: number }[]; tag: string }> {
    let after: string | undefined;
    if (page.cursor !== undefined) {
      const cursor = decodeCursor(namespace, page.cursor);
      if (cursor.phase !== 'keys') throw invalidCursor(); // a listing's cursor past its keys
      after = cursor.after;
    }
    const keys: { key: string; version: number }[] = [];
    const now = this.deps.now();
    for await (const { key, meta } of this.deps.records.keysIn(namespace, after)) {
      if (readable(caller, namespace, meta, now)) keys.push({ key, version: meta.latest });
      if (keys.length > page.limit) break;
    }
    // The tag is the whole namespace's, whichever page this is: a watcher of the first page hears of a
    // change on any other. A namespace that fits one page has it from this scan; a larger one pays another.
    const whole = after === undefined && keys.length <= page.limit;
    return { keys, tag: whole ? tagOf(keys) : await this.namespaceTag(caller, namespace) };
  }

  /** The tag of every key directly in `namespace` whose latest type the caller may read. */
  private async namespaceTag(caller: Principal, namespace: string): Promise<string> {
    const keys: { key: string; version: number }[] = [];
    const now = this.deps.now();
    for await (const { key, meta } of this.deps.records.keysIn(namespace))
      if (readable(caller, namespace, meta, now)) keys.push({ key, version: meta.latest });
    return tagOf(keys);
  }

  private async valuesOf(
    caller: Principal,
    namespace: string,
    page: { limit: number },
    { keys: candidates, tag }: { keys: { key: string }[]; tag: string },
  ): Promise<TaggedValues> {
    const inPage = candidates.slice(0, page.limit);
    const found = await this.deps.records.latestMany(
      namespace,
      inPage.map(({ key }) => key),
    );
    const values: NamespaceValues['values'] = [];
    let bytes = 0;
    let last: string | undefined = candidates.length > page.limit ? inPage.at(-1)?.key : undefined;
    for (const [i, { key }] of inPage.entries()) {
      const latest = found[i];
      // Deleted, or replaced by a type the caller may not read, since the scan: left out as well.
      if (!latest || !readable(caller, namespace, latest.meta, this.deps.now())) continue;
      const version = latest.meta.latest;
      // The common case at once; an older keyring version or a record read apart, through open().
      const { record, value } =
        latest.record !== undefined &&
        caller.access.may('read', namespace, latest.record.type) &&
        this.deps.reader.loaded(latest.record)
          ? {
              record: latest.record,
              value: this.deps.reader.valueNow({ namespace, key, version }, latest.record),
            }
          : await openVersion(this.deps, caller, namespace, key, latest, version);
      values.push({
        key,
        version,
        type: record.type,
        value,
        created_at: iso(record.createdAt),
        writer_reads_all: record.writerReadsAll === true,
      });
      bytes += Buffer.byteLength(value, 'utf8');
      if (bytes >= VALUES_PAGE_BYTES && i < inPage.length - 1) {
        last = key;
        break;
      }
    }
    const next_cursor =
      last === undefined ? null : encodeCursor(namespace, { phase: 'keys', after: last });
    return { page: { kind: 'values', namespace, values, next_cursor }, tag };
  }

  /**
   * A page of the namespace's values as soon as its tag is not `tag` — now, or when a key in the namespace
   * is written, added or deleted —, or 'unchanged' at the deadline.
   */
  async valuesAfter(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
    tag: string,
    limit: WaitLimit,
  ): Promise<TaggedValues | 'unchanged'> {
    if (!caller.access.mayInNamespace('read', namespace)) throw forbidden(`read in ${namespace}`);
    return untilChanged(this.deps.changes, namespace, undefined, limit, async () => {
      const candidates = await this.readableKeys(caller, namespace, page);
      return candidates.tag === tag
        ? undefined
        : await this.valuesOf(caller, namespace, page, candidates);
    });
  }
}

/** A live key (not deleted by its time) whose latest type the caller may read. */
function readable(caller: Principal, namespace: string, meta: KeyMeta, now: number): boolean {
  return caller.access.may('read', namespace, meta.type) && expiredAt(meta, now) === undefined;
}

/** A digest of keys and their versions: what changes when one is written, added or deleted. */
function tagOf(keys: readonly { key: string; version: number }[]): string {
  let listed = '';
  for (const { key, version } of keys) listed += `${key}\u0000${version}\u0000`;
  return createHash('sha256').update(listed).digest('base64url').slice(0, 22);
}
