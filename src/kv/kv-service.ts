/**
 * The key-value service: authorize → storage, the store sealing what it writes and opening what it reads
 * (store/kv-version-writes.ts, kv-version-reads.ts). Every check that can answer "forbidden" without
 * looking at stored data runs first, so a forbidden caller learns nothing about what exists. Single keys
 * are here; a namespace's values in one call are namespace-values.ts's, a listing listing.ts's.
 */
import type { Principal } from '../auth/principal.js';
import { AppError, forbidden, notFound } from '../errors.js';
import { METADATA_LIMITS } from '../model/tokens.js';
import type { ValueType } from '../model/value-types.js';
import { StaleKeyringError } from '../store/keyring-store.js';
import { expiredAt, type KeyMeta, type TrashedKey, takenOnBy } from '../store/kv-format.js';
import { type Latest, type RecordWrite, VersionsUsedUpError } from '../store/kv-records.js';
import { VersionReader } from '../store/kv-version-reads.js';
import { type AppendedVersion, packedVersionRecord } from '../store/kv-version-writes.js';
import { Deletions, deletedKey } from './deletions.js';
import {
  type Entry,
  type EntryInfo,
  iso,
  type KeyMetadata,
  type KeyMetadataChange,
  type TaggedValues,
  type VersionList,
} from './entries.js';
import { expectVersion, requireNamedVersion } from './expect-version.js';
import { untilChanged, type WaitLimit } from './key-changes.js';
import { type Listing, listNamespace } from './listing.js';
import { NamespaceValuesReader } from './namespace-values.js';
import { openVersion } from './version-access.js';
import { versionList } from './version-list.js';
import { readsAll, requireMetadataRights } from './write-rights.js';

export type {
  Entry,
  EntryInfo,
  NamespaceValues,
  TaggedValues,
  TrashListing,
  VersionList,
} from './entries.js';
export type { WaitLimit } from './key-changes.js';
export { VALUES_PAGE_BYTES } from './namespace-values.js';

import type { BeforeCommit, KvServiceDeps } from './kv-deps.js';

export type { BeforeCommit, KvServiceDeps };

export class KvService {
  /** Opens what the store reads (store/kv-version-reads.ts): the service never holds an envelope. */
  private readonly reader: VersionReader;
  private readonly namespaceValues: NamespaceValuesReader;

  /** Delete, undelete, destroy and the trash (deletions.ts). */
  readonly deletions: Deletions;

  constructor(private readonly deps: KvServiceDeps) {
    this.deletions = new Deletions(deps);
    this.reader = new VersionReader(deps.keyring, deps.records);
    this.namespaceValues = new NamespaceValuesReader({
      records: deps.records,
      reader: this.reader,
      changes: deps.changes,
      now: deps.now,
    });
  }

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
    /** `ifVersion` is the version the caller read, not one it named: a key requiring check-and-set refuses. */
    versionImplied = false,
  ): Promise<EntryInfo & { created: boolean; pruned: number[]; deletes_at?: string }> {
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
          ifVersion !== undefined && !versionImplied,
        );
        this.deps.changes?.changed({ namespace, key });
        return {
          namespace,
          key,
          version: result.version,
          type,
          created_at: iso(createdAt),
          created: result.created,
          pruned: result.pruned,
          ...(result.deleteAfter ? { deletes_at: iso(createdAt + result.deleteAfter) } : {}),
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
    versionNamed: boolean,
  ): Promise<AppendedVersion> {
    const keyring = this.deps.keyring.current();
    const ref = { namespace, key };
    const writerReadsAll = readsAll(caller, namespace);
    try {
      return await this.deps.records.append(ref, {
        type,
        createdAt,
        stamp: this.deps.keyring.stamp,
        actor: caller.id,
        seal: (version) =>
          packedVersionRecord(keyring, { ...ref, version, type, value, createdAt, writerReadsAll }),
        check: (meta, trashed) => {
          // Replacing a key of another type also needs the right to write that type; so does writing a
          // deleted key again, which takes its versions on.
          if (meta && !caller.access.may('write', namespace, meta.type))
            throw forbidden(`replace a ${meta.type} value in ${namespace}`);
          if (trashed && !caller.access.may('write', namespace, trashed.type))
            throw forbidden(`write again a deleted ${trashed.type} key in ${namespace}`);
          requireNamedVersion((meta ?? takenOnBy(trashed, type))?.casRequired, versionNamed);
          expectVersion(ifVersion, meta?.latest ?? 0);
        },
        alongside,
      });
    } catch (err) {
      if (err instanceof VersionsUsedUpError) throw new AppError('invalid_request', err.message);
      throw err;
    }
  }

  /**
   * The latest version, or version `version`. A deleted key has no latest version (404, saying when it was
   * deleted to a caller who may list its type); its versions are still read by number.
   */
  async read(caller: Principal, namespace: string, key: string, version?: number): Promise<Entry> {
    if (!caller.access.mayInNamespace('read', namespace)) throw forbidden(`read in ${namespace}`);
    const found = await this.latest(namespace, key);
    if (found) return this.readExisting(caller, namespace, key, found, version);
    const trashed = await this.deps.records.trash.get({ namespace, key });
    if (!trashed) throw notFound('no such key');
    if (version !== undefined)
      return this.readExisting(
        caller,
        namespace,
        key,
        { meta: trashed, record: undefined },
        version,
      );
    throw deletedKey(caller, namespace, trashed);
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
    // A key deleted by its time is as one in the trash: the namespace of the same name is listed.
    let expired: TrashedKey | undefined;
    if (mayKnowKey) {
      const found = await this.latest(parent, last);
      const at = found?.meta.deletedVersions && expiredAt(found.meta, this.deps.now());
      if (found && at !== undefined) expired = { ...found.meta, deletedAt: at };
      else if (found && mayRead) return this.readExisting(caller, parent, last, found, undefined);
      else if (found && caller.access.may('list', parent, found.meta.type))
        throw forbidden(`read ${found.meta.type} values in ${parent}`);
    }
    if (mayList && (await this.deps.records.namespaceExists(whole!))) {
      return listNamespace(this.deps.records, caller, whole!, { limit }, this.deps.now());
    }
    const trashed =
      mayKnowKey &&
      (expired ?? (await this.deps.records.trash.get({ namespace: parent, key: last })));
    if (trashed) throw deletedKey(caller, parent, trashed);
    throw notFound('no such key or namespace');
  }

  /**
   * Sets the key's own metadata (its map replaced when given) and the most versions it keeps (0: no
   * limit; the next write prunes beyond it). Needs the right to write the key's type, and to delete it for
   * a limit or a time that erases more than the key's do now (lifecycleErases).
   */
  async setMetadata(
    caller: Principal,
    namespace: string,
    key: string,
    change: KeyMetadataChange,
    beforeCommit?: BeforeCommit,
    /** With no such key, keep the metadata for its first version, of this type (Vault's metadata alone). */
    createAs?: ValueType,
  ): Promise<KeyMetadata> {
    if (!caller.access.mayInNamespace('write', namespace)) throw forbidden(`write in ${namespace}`);
    const custom = change.custom_metadata;
    if (custom && Buffer.byteLength(JSON.stringify(custom)) > METADATA_LIMITS.bytes)
      throw new AppError(
        'invalid_request',
        `custom_metadata is over ${METADATA_LIMITS.bytes} bytes in all`,
      );
    const deleteAfter =
      change.delete_version_after === undefined ? undefined : change.delete_version_after * 1000;
    const may = (meta: Pick<KeyMeta, 'type' | 'maxVersions' | 'deleteAfter'>): void =>
      requireMetadataRights(caller, namespace, meta, change.max_versions, deleteAfter);
    const meta =
      (await this.meta(namespace, key)) ?? (await this.deps.records.trash.get({ namespace, key }));
    if (!meta && createAs === undefined) throw notFound('no such key');
    may(meta ?? { type: createAs! });
    const alongside = (await beforeCommit?.()) ?? [];
    const now = await this.deps.records.metadata.set(
      { namespace, key },
      {
        ...(custom === undefined ? {} : { custom }),
        ...(change.max_versions === undefined ? {} : { maxVersions: change.max_versions }),
        ...(change.cas_required === undefined ? {} : { casRequired: change.cas_required }),
        ...(deleteAfter === undefined ? {} : { deleteAfter }),
      },
      may,
      alongside,
      caller.id,
      createAs === undefined ? undefined : { type: createAs, at: this.deps.now() },
    );
    if (!now) throw notFound('no such key');
    this.deps.changes?.changed({ namespace, key });
    return {
      namespace,
      key,
      custom_metadata: now.custom ?? {},
      max_versions: now.maxVersions ?? 0,
      cas_required: now.casRequired === true,
      delete_version_after: (now.deleteAfter ?? 0) / 1000,
    };
  }

  /** The key's versions, a deleted key's too (saying when it was deleted): version-list.ts. */
  versions(caller: Principal, namespace: string, key: string): Promise<VersionList> {
    return versionList(this.deps, caller, namespace, key);
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
    return listNamespace(this.deps.records, caller, namespace, page, this.deps.now());
  }

  /** A page of the namespace's values the caller may read (namespace-values.ts). */
  values(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<TaggedValues> {
    return this.namespaceValues.values(caller, namespace, page);
  }

  /** The page once the namespace's tag is not `tag`, or 'unchanged' at the deadline (namespace-values.ts). */
  valuesAfter(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
    tag: string,
    limit: WaitLimit,
  ): Promise<TaggedValues | 'unchanged'> {
    return this.namespaceValues.valuesAfter(caller, namespace, page, tag, limit);
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
    return untilChanged(this.deps.changes, namespace, key, limit, async () => {
      const latest = await this.latest(namespace, key);
      // Deleted by its time: as a deleted key is, absent.
      const found =
        latest?.meta.deletedVersions && expiredAt(latest.meta, this.deps.now()) !== undefined
          ? undefined
          : latest;
      if (found && found.meta.latest > after)
        return this.readExisting(caller, namespace, key, found, undefined);
      if (found && !caller.access.may('read', namespace, found.meta.type))
        throw forbidden(`read ${found.meta.type} values in ${namespace}`);
      if (!found && after > 0) throw notFound('no such key');
      return undefined;
    });
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
    const marks = latest.meta.deletedVersions;
    // The latest version's time to be deleted has come: the key reads as deleted.
    const expired =
      wanted === undefined && marks ? expiredAt(latest.meta, this.deps.now()) : undefined;
    if (expired !== undefined)
      throw deletedKey(caller, namespace, { ...latest.meta, deletedAt: expired });
    const { record, value } = await openVersion(
      { records: this.deps.records, reader: this.reader, now: this.deps.now },
      caller,
      namespace,
      key,
      latest,
      version,
    );
    return {
      kind: 'entry',
      namespace,
      key,
      version,
      type: record.type,
      value,
      created_at: iso(record.createdAt),
      ...(marks?.has(version) ? { deletes_at: iso(marks.get(version)!) } : {}),
    };
  }
}
