/**
 * The key-value service: authorize → seal or open → storage. Every check that can answer "forbidden"
 * without looking at stored data runs first, so a forbidden caller learns nothing about what exists.
 */
import { createHash } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { SealedDataError } from '../crypto/aead.js';
import { openSecret, type RecordIdentity, verifyConfig } from '../crypto/envelope.js';
import { AppError, forbidden, notFound } from '../errors.js';
import type { ValueType } from '../model/value-types.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import { StaleKeyringError } from '../store/keyring-store.js';
import type { KeyMeta, VersionRecord } from '../store/kv-format.js';
import {
  type KvRecords,
  type Latest,
  type RecordWrite,
  VersionsUsedUpError,
} from '../store/kv-records.js';
import { packedVersionRecord } from '../store/kv-version-writes.js';
import { decodeCursor, encodeCursor, invalidCursor } from './cursor.js';
import type { KeyChanges, WaitHolder } from './key-changes.js';
import { type Listing, listNamespace } from './listing.js';

export interface KvServiceDeps {
  readonly records: KvRecords;
  /** This process's keyring; a rotation by any process is picked up through it. */
  readonly keyring: Pick<KeyringHolder, 'current' | 'stamp' | 'refresh'>;
  readonly maxValueBytes: number;
  readonly now: () => number;
  /** Told of every change this service makes, to wake the requests waiting for it. */
  readonly changes?: KeyChanges;
}

export interface EntryInfo {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  readonly created_at: string;
}

/** A key's value: `kind` tells it from a listing where a path may name either (GET /v1/kv/{ns}/{key}). */
export interface Entry extends EntryInfo {
  readonly kind: 'entry';
  readonly value: string;
}

export interface VersionList {
  readonly namespace: string;
  readonly key: string;
  readonly current_version: number;
  readonly versions: { version: number; type: ValueType; created_at: string }[];
}

/** One page of a namespace's values (GET /v1/kv/{ns}/?values=true). */
export interface NamespaceValues {
  readonly kind: 'values';
  readonly namespace: string;
  readonly values: Omit<Entry, 'namespace' | 'kind'>[];
  readonly next_cursor: string | null;
}

/** A page of values and its tag: what changes when a key of the namespace is written, added or deleted. */
export interface TaggedValues {
  readonly page: NamespaceValues;
  readonly tag: string;
}

/** Until when, and until what, a read waits for a change. */
export interface WaitLimit {
  readonly deadline: number;
  readonly signal?: AbortSignal;
  /** Who waits: each token and each client address may hold only a share of the slots (key-changes.ts). */
  readonly holder?: WaitHolder;
}

/**
 * A page of values ends once it holds this many bytes of values (always at least one value), so that a
 * namespace of large values is not answered in one body of up to `limit` × max_value_bytes.
 */
export const VALUES_PAGE_BYTES = 4 * 1024 * 1024;

/** Runs just before a change (the audit intent); what it returns is committed in the change's transaction. */
export type BeforeCommit = () => Promise<readonly RecordWrite[]>;

const iso = (ms: number): string => new Date(ms).toISOString();

export class KvService {
  constructor(private readonly deps: KvServiceDeps) {}

  /**
   * Stores a new version; `created` is true when the key did not exist. Resolves once durable.
   * `beforeCommit` (the audit intent) runs once the request is known to be allowed, before the change; the
   * writes it returns are committed with the change.
   */
  async put(
    caller: Principal,
    namespace: string,
    key: string,
    value: string,
    type: ValueType,
    beforeCommit?: BeforeCommit,
    ifVersion?: number,
  ): Promise<EntryInfo & { created: boolean }> {
    if (!caller.access.may('write', namespace, type))
      throw forbidden(`write ${type} values in ${namespace}`);
    if (Buffer.byteLength(value, 'utf8') > this.deps.maxValueBytes) {
      throw new AppError(
        'payload_too_large',
        `the value is larger than ${this.deps.maxValueBytes} bytes`,
      );
    }
    const alongside = (await beforeCommit?.()) ?? [];
    const createdAt = this.deps.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.appendVersion(
          caller,
          namespace,
          key,
          value,
          type,
          createdAt,
          alongside,
          ifVersion,
        );
        this.deps.changes?.changed({ namespace, key });
        return {
          namespace,
          key,
          version: result.version,
          type,
          created_at: iso(createdAt),
          created: result.created,
        };
      } catch (err) {
        if (!(err instanceof StaleKeyringError) || attempt >= 3) throw err;
        await this.deps.keyring.refresh();
      }
    }
  }

  /** One transaction (store/kv-records.ts): the next version, sealed under the keyring this process holds. */
  private async appendVersion(
    caller: Principal,
    namespace: string,
    key: string,
    value: string,
    type: ValueType,
    createdAt: number,
    alongside: readonly RecordWrite[],
    ifVersion: number | undefined,
  ): Promise<{ version: number; created: boolean }> {
    const keyring = this.deps.keyring.current();
    const ref = { namespace, key };
    try {
      return await this.deps.records.append(ref, {
        type,
        createdAt,
        stamp: this.deps.keyring.stamp,
        seal: (version) =>
          packedVersionRecord(keyring, { ...ref, version, type, value, createdAt }),
        check: (meta) => {
          // Replacing a key of another type also needs the right to write that type.
          if (meta && !caller.access.may('write', namespace, meta.type))
            throw forbidden(`replace a ${meta.type} value in ${namespace}`);
          expectVersion(ifVersion, meta?.latest ?? 0);
        },
        alongside,
      });
    } catch (err) {
      if (err instanceof VersionsUsedUpError) throw new AppError('invalid_request', err.message);
      throw err;
    }
  }

  /** The latest version, or version `version`. */
  async read(caller: Principal, namespace: string, key: string, version?: number): Promise<Entry> {
    if (!caller.access.mayInNamespace('read', namespace)) throw forbidden(`read in ${namespace}`);
    const found = await this.latest(namespace, key);
    if (!found) throw notFound('no such key');
    return this.readExisting(caller, namespace, key, found, version);
  }

  /**
   * GET on a multi-segment path with no listing marker: the key named by the last segment if it exists
   * (and the caller may read there), else the namespace named by the whole path if anything lies in it.
   */
  async readOrList(
    caller: Principal,
    parent: string,
    last: string,
    whole: string | null,
    limit: number,
  ): Promise<Entry | Listing> {
    const mayRead = caller.access.mayInNamespace('read', parent);
    // A caller who may list `parent` may learn that the key exists (a listing would show it).
    const mayKnowKey = mayRead || caller.access.mayInNamespace('list', parent);
    const mayList = whole !== null && caller.access.mayBeneath('list', whole);
    if (!mayKnowKey && !mayList) throw forbidden(`read or list in ${parent}`);
    if (mayKnowKey) {
      const found = await this.latest(parent, last);
      if (found && mayRead) return this.readExisting(caller, parent, last, found, undefined);
      if (found && caller.access.may('list', parent, found.meta.type))
        throw forbidden(`read ${found.meta.type} values in ${parent}`);
    }
    if (mayList && (await this.deps.records.namespaceExists(whole!))) {
      return listNamespace(this.deps.records, caller, whole!, { limit });
    }
    throw notFound('no such key or namespace');
  }

  async versions(caller: Principal, namespace: string, key: string): Promise<VersionList> {
    if (!caller.access.mayInNamespace('list', namespace)) throw forbidden(`list in ${namespace}`);
    const meta = await this.meta(namespace, key);
    if (!meta) throw notFound('no such key');
    if (!caller.access.may('list', namespace, meta.type))
      throw forbidden(`list ${meta.type} keys in ${namespace}`);
    const versions: VersionList['versions'] = [];
    for await (const { version, record } of this.deps.records.versions({ namespace, key })) {
      if (!record)
        throw this.deps.records.versionError({ namespace, key }, version, 'does not parse');
      versions.push({ version, type: record.type, created_at: iso(record.createdAt) });
    }
    return { namespace, key, current_version: meta.latest, versions };
  }

  list(
    caller: Principal,
    namespace: string,
    page: {
      limit: number;
      cursor?: string | undefined;
      prefix?: string | undefined;
      details?: boolean;
    },
  ): Promise<Listing> {
    return listNamespace(this.deps.records, caller, namespace, page);
  }

  /**
   * The latest values of the keys directly in `namespace` that the caller may read, in key order, a page at
   * a time. A key whose type the caller may not read is left out, and the answer does not say that it was
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
    for await (const { key, meta } of this.deps.records.keysIn(namespace, after)) {
      if (caller.access.may('read', namespace, meta.type)) keys.push({ key, version: meta.latest });
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
    for await (const { key, meta } of this.deps.records.keysIn(namespace))
      if (caller.access.may('read', namespace, meta.type)) keys.push({ key, version: meta.latest });
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
      if (!latest || !caller.access.may('read', namespace, latest.meta.type)) continue;
      const version = latest.meta.latest;
      // The common case at once; an older keyring version or a record read apart, through open().
      const { record, value } =
        latest.record !== undefined &&
        caller.access.may('read', namespace, latest.meta.type) &&
        this.deps.keyring.current().has(keyVersionOf(latest.record))
          ? {
              record: latest.record,
              value: this.openRecord(caller, namespace, key, version, latest.record),
            }
          : await this.open(caller, namespace, key, latest, version);
      values.push({
        key,
        version,
        type: record.type,
        value,
        created_at: iso(record.createdAt),
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

  /** Deletes the key and all its versions; its last version number stays in its counter, so numbers are never reused. */
  async remove(
    caller: Principal,
    namespace: string,
    key: string,
    beforeCommit?: BeforeCommit,
    ifVersion?: number,
  ): Promise<void> {
    if (!caller.access.mayInNamespace('delete', namespace))
      throw forbidden(`delete in ${namespace}`);
    const meta = await this.meta(namespace, key);
    if (!meta) {
      // A precondition on a key that is not there fails (RFC 9110, If-Match): 412, not 404.
      if (ifVersion !== undefined) expectVersion(ifVersion, 0);
      throw notFound('no such key');
    }
    if (!caller.access.may('delete', namespace, meta.type))
      throw forbidden(`delete ${meta.type} keys in ${namespace}`);
    const alongside = (await beforeCommit?.()) ?? [];
    const removed = await this.deps.records.remove(
      { namespace, key },
      (now) => {
        if (!caller.access.may('delete', namespace, now.type))
          throw forbidden(`delete ${now.type} keys in ${namespace}`);
        expectVersion(ifVersion, now.latest);
      },
      alongside,
    );
    if (!removed) {
      if (ifVersion !== undefined) expectVersion(ifVersion, 0);
      throw notFound('no such key');
    }
    this.deps.changes?.changed({ namespace, key });
  }

  /**
   * The key's latest entry as soon as its version is above `after` — now, or when a write makes it so —, or
   * 'unchanged' at the deadline. A key that does not exist is waited for when `after` is 0 (its creation),
   * and is 404 otherwise (it was deleted: it will not come back at a version above `after` unnoticed).
   */
  async readAfter(
    caller: Principal,
    namespace: string,
    key: string,
    after: number,
    limit: WaitLimit,
  ): Promise<Entry | 'unchanged'> {
    if (!caller.access.mayInNamespace('read', namespace)) throw forbidden(`read in ${namespace}`);
    const hold = this.waits().hold(namespace, key, limit.holder);
    try {
      // Held before the first read: a write between that read and the wait still wakes it.
      for (;;) {
        const found = await this.latest(namespace, key);
        if (found && found.meta.latest > after)
          return await this.readExisting(caller, namespace, key, found, undefined);
        if (found && !caller.access.may('read', namespace, found.meta.type))
          throw forbidden(`read ${found.meta.type} values in ${namespace}`);
        if (!found && after > 0) throw notFound('no such key');
        if (!(await hold.next(limit.deadline, limit.signal))) return 'unchanged';
      }
    } finally {
      hold.release();
    }
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
    const hold = this.waits().hold(namespace, undefined, limit.holder);
    try {
      for (;;) {
        const candidates = await this.readableKeys(caller, namespace, page);
        if (candidates.tag !== tag) return await this.valuesOf(caller, namespace, page, candidates);
        if (!(await hold.next(limit.deadline, limit.signal))) return 'unchanged';
      }
    } finally {
      hold.release();
    }
  }

  private waits(): KeyChanges {
    if (!this.deps.changes) throw new AppError('internal', 'waiting for a change is not set up');
    return this.deps.changes;
  }

  /** The key's index (a RecordIntegrityError, answered 500, when it fails its check). */
  private meta(namespace: string, key: string): Promise<KeyMeta | undefined> {
    return this.deps.records.index({ namespace, key });
  }

  /**
   * The key's index with its newest version record, read together: an index older than the versions
   * stored (put back by someone who can write the storage) is a RecordIntegrityError, never an older value.
   */
  private latest(namespace: string, key: string): Promise<Latest | undefined> {
    return this.deps.records.latest({ namespace, key });
  }

  private async readExisting(
    caller: Principal,
    namespace: string,
    key: string,
    latest: Latest,
    wanted: number | undefined,
  ): Promise<Entry> {
    const version = wanted ?? latest.meta.latest;
    const { record, value } = await this.open(caller, namespace, key, latest, version);
    return {
      kind: 'entry',
      namespace,
      key,
      version,
      type: record.type,
      value,
      created_at: iso(record.createdAt),
    };
  }

  /** Version `version` of the key, opened (a secret) or checked (a config value), for this caller. */
  private async open(
    caller: Principal,
    namespace: string,
    key: string,
    { meta, record: latestRecord }: Latest,
    version: number,
  ): Promise<{ record: VersionRecord; value: string }> {
    if (!caller.access.may('read', namespace, meta.type))
      throw forbidden(`read ${meta.type} values in ${namespace}`);
    if (version < meta.first || version > meta.latest) throw notFound('no such version');
    const record: VersionRecord | undefined =
      version === meta.latest && latestRecord !== undefined
        ? latestRecord
        : await this.deps.records.version({ namespace, key }, version);
    if (!record)
      throw this.deps.records.versionError(
        { namespace, key },
        version,
        'is missing or does not parse',
      );
    // A record sealed under a keyring version this process has not loaded yet: another process rotated.
    if (!this.deps.keyring.current().has(keyVersionOf(record))) await this.deps.keyring.refresh();
    return { record, value: this.openRecord(caller, namespace, key, version, record) };
  }

  /** `record` (version `version` of the key) opened or checked, at once: its keyring version is loaded. */
  private openRecord(
    caller: Principal,
    namespace: string,
    key: string,
    version: number,
    record: VersionRecord,
  ): string {
    if (!caller.access.may('read', namespace, record.type))
      throw forbidden(`read ${record.type} values in ${namespace}`);
    const id: RecordIdentity = { namespace, key, version, type: record.type };
    const keyring = this.deps.keyring.current();
    try {
      if (record.type === 'secret') return openSecret(keyring, id, record.sealed);
      verifyConfig(keyring, id, record.value, record.seal);
      return record.value;
    } catch (err) {
      if (err instanceof SealedDataError)
        throw this.deps.records.versionError(
          { namespace, key },
          version,
          `failed to open or verify (${record.type})`,
        );
      throw err;
    }
  }
}

/** A digest of keys and their versions: what changes when one is written, added or deleted. */
function tagOf(keys: readonly { key: string; version: number }[]): string {
  let listed = '';
  for (const { key, version } of keys) listed += `${key}\u0000${version}\u0000`;
  return createHash('sha256').update(listed).digest('base64url').slice(0, 22);
}

const keyVersionOf = (record: VersionRecord): number =>
  record.type === 'secret' ? record.sealed.keyVersion : record.seal.keyVersion;

/**
 * Check-and-set: refuses a change unless the key's latest version is `expected` (0: the key has no live
 * version). Checked under the write's locks, so of two writers expecting the same version one wins.
 */
function expectVersion(expected: number | undefined, current: number): void {
  if (expected === undefined || expected === current) return;
  throw new AppError(
    'precondition_failed',
    current === 0
      ? `the key does not exist (expected version ${expected})`
      : expected === 0
        ? `the key exists (its latest version is ${current})`
        : `the key's latest version is ${current}, not ${expected}`,
    undefined,
    undefined,
    { current_version: current },
  );
}
