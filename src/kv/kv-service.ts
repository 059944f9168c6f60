/**
 * The key-value service: authorize → seal or open → storage. Every check that can answer "forbidden"
 * without looking at stored data runs first, so a forbidden caller learns nothing about what exists.
 */
import { LastOpened } from '../auth/bounded-cache.js';
import type { Principal } from '../auth/principal.js';
import { SealedDataError } from '../crypto/aead.js';
import { openSecret, type RecordIdentity, verifyConfig } from '../crypto/envelope.js';
import { AppError, forbidden, notFound } from '../errors.js';
import type { ValueType } from '../model/value-types.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { counterKey, metaKey, versionKey, versionOf, versionRange } from '../storage/layout.js';
import { GENERATION_KEY, type KeyringHolder, StaleKeyringError } from '../store/keyring-store.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from '../store/record-seal.js';
import { type Listing, listNamespace, namespaceExists } from './listing.js';
import { type KeyMeta, packCounter, unpackCounter, unpackMeta, unpackVersion } from './records.js';
import { packedVersionRecord, versionWrites } from './version-writes.js';

export interface KvServiceDeps {
  readonly storage: StorageBackend;
  /** This process's keyring; a rotation by any process is picked up through it. */
  readonly keyring: Pick<KeyringHolder, 'current' | 'stamp' | 'checkCurrent' | 'refresh'>;
  readonly maxValueBytes: number;
  readonly now: () => number;
  /** The MAC of the key index and version counters (store/record-seal.ts). */
  readonly seal: RecordSeal;
  /** Called when a stored record fails to open or verify; must not log the value. */
  readonly onIntegrityError: (
    where: { namespace: string; key: string; version: number },
    reason: string,
  ) => void;
}

export interface EntryInfo {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  readonly created_at: string;
}

export interface Entry extends EntryInfo {
  readonly value: string;
}

export interface VersionList {
  readonly namespace: string;
  readonly key: string;
  readonly current_version: number;
  readonly versions: { version: number; type: ValueType; created_at: string }[];
}

/** Runs just before a change (the audit intent); what it returns is committed in the change's transaction. */
export type BeforeCommit = () => Promise<readonly StorageWrite[]>;

const MAX_VERSION = 0xffff_ffff;
const iso = (ms: number): string => new Date(ms).toISOString();

export class KvService {
  /** Key meta last checked, by storage key. */
  private readonly checkedMeta = new LastOpened<KeyMeta>(10_000);

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
        );
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

  /**
   * One transaction: check the keyring generation, assign the next version, write. The value is sealed
   * before the transaction for the version the index (or, for a deleted key, its counter) promises —
   * sealing binds the version number — so the shared write lock is not held while sealing; only if
   * another write took that number meanwhile is it sealed again inside.
   *
   * Version numbers only grow, so the transaction also reads the record at the promised number: a record
   * already there, or a number below the promised one, means the index or counter was put back to an
   * older copy (a replay). That is refused as an integrity error, and no stored version is overwritten.
   */
  private async appendVersion(
    caller: Principal,
    namespace: string,
    key: string,
    value: string,
    type: ValueType,
    createdAt: number,
    alongside: readonly StorageWrite[],
  ): Promise<{ version: number; created: boolean }> {
    const keyring = this.deps.keyring.current();
    const stamp = this.deps.keyring.stamp;
    const [mKey, cKey] = [metaKey(namespace, key), counterKey(namespace, key)];
    const { seal } = this.deps;
    const where = { namespace, key };
    const lastAssigned = (
      meta: KeyMeta | undefined,
      counterBytes: Uint8Array | undefined,
    ): number => meta?.latest ?? unpackCounter(seal, cKey, counterBytes);
    // What the index and counter hold now (read together: one statement on a remote store); the
    // transaction reads them again under its locks. The counter counts only where there is no index.
    const [metaNow, counterRead] = await Promise.all([
      this.deps.storage.get(mKey),
      this.deps.storage.get(cKey),
    ]);
    const counterNow = metaNow ? undefined : counterRead;
    const next =
      (await this.checked(where, async () =>
        lastAssigned(metaNow && this.openMeta(mKey, metaNow), counterNow),
      )) + 1;
    if (next > MAX_VERSION)
      throw new AppError('invalid_request', 'this key has used up its version numbers');
    const sealedAhead = packedVersionRecord(keyring, {
      namespace,
      key,
      version: next,
      type,
      value,
      createdAt,
    });
    const promised = versionKey(namespace, key, next);
    return this.checked(where, () =>
      this.deps.storage.atomic(
        [mKey, cKey, GENERATION_KEY, promised],
        ([metaBytes, counterBytes, generationBytes, promisedBytes]) => {
          this.deps.keyring.checkCurrent(stamp, generationBytes);
          const meta = metaBytes && this.openMeta(mKey, metaBytes);
          // Replacing a key of another type also needs the right to write that type.
          if (meta && !caller.access.may('write', namespace, meta.type))
            throw forbidden(`replace a ${meta.type} value in ${namespace}`);
          const version = lastAssigned(meta, counterBytes) + 1;
          if (version < next || (version === next && promisedBytes !== undefined)) {
            throw new RecordIntegrityError(
              meta ? 'kv-meta' : 'kv-counter',
              printableKey(meta ? mKey : cKey),
              `is older than the versions stored (version ${version} exists)`,
            );
          }
          if (version > MAX_VERSION)
            throw new AppError('invalid_request', 'this key has used up its version numbers');
          const writes = versionWrites(
            keyring,
            seal,
            { namespace, key, version, type, value, createdAt, previous: meta },
            version === next ? sealedAhead : undefined,
          );
          return { writes: [...writes, ...alongside], result: { version, created: !meta } };
        },
        // Read just now; a remote store then need not read them again to learn what the plan writes.
        [metaNow, counterNow, stamp.bytes, undefined],
      ),
    );
  }

  /** The latest version, or version `version`. */
  async read(caller: Principal, namespace: string, key: string, version?: number): Promise<Entry> {
    if (!caller.access.mayInNamespace('read', namespace)) throw forbidden(`read in ${namespace}`);
    const found = await this.metaAndNewest(namespace, key);
    if (!found) throw notFound('no such key');
    return this.readExisting(caller, namespace, key, found.meta, version, found.newest);
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
      const found = await this.metaAndNewest(parent, last);
      if (found && mayRead)
        return this.readExisting(caller, parent, last, found.meta, undefined, found.newest);
      if (found && caller.access.may('list', parent, found.meta.type))
        throw forbidden(`read ${found.meta.type} values in ${parent}`);
    }
    if (mayList && (await namespaceExists(this.deps.storage, whole!))) {
      return this.checked({ namespace: whole!, key: '' }, () =>
        listNamespace(this.deps.storage, this.deps.seal, caller, whole!, { limit }),
      );
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
    for await (const entry of this.deps.storage.scan(versionRange(namespace, key))) {
      const version = versionOf(entry.key);
      const record = unpackVersion(entry.value);
      if (!record)
        throw this.integrityError({ namespace, key, version }, 'unreadable version record');
      versions.push({ version, type: record.type, created_at: iso(record.createdAt) });
    }
    return { namespace, key, current_version: meta.latest, versions };
  }

  list(
    caller: Principal,
    namespace: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<Listing> {
    return this.checked({ namespace, key: '' }, () =>
      listNamespace(this.deps.storage, this.deps.seal, caller, namespace, page),
    );
  }

  /** Deletes the key and all its versions; its last version number stays in its counter, so numbers are never reused. */
  async remove(
    caller: Principal,
    namespace: string,
    key: string,
    beforeCommit?: BeforeCommit,
  ): Promise<void> {
    if (!caller.access.mayInNamespace('delete', namespace))
      throw forbidden(`delete in ${namespace}`);
    const meta = await this.meta(namespace, key);
    if (!meta) throw notFound('no such key');
    if (!caller.access.may('delete', namespace, meta.type))
      throw forbidden(`delete ${meta.type} keys in ${namespace}`);
    const alongside = (await beforeCommit?.()) ?? [];
    const [mKey, cKey] = [metaKey(namespace, key), counterKey(namespace, key)];
    await this.checked({ namespace, key }, () =>
      this.deps.storage.atomic([mKey], ([metaBytes]) => {
        if (!metaBytes) throw notFound('no such key');
        const meta = this.openMeta(mKey, metaBytes);
        if (!caller.access.may('delete', namespace, meta.type))
          throw forbidden(`delete ${meta.type} keys in ${namespace}`);
        // The key's last version number goes to its counter, so a new life of the key numbers on from it.
        const writes: StorageWrite[] = [
          { op: 'delete', key: mKey },
          { op: 'put', key: cKey, value: packCounter(this.deps.seal, cKey, meta.latest) },
          ...alongside,
        ];
        for (let v = meta.first; v <= meta.latest; v++)
          writes.push({ op: 'delete', key: versionKey(namespace, key, v) });
        return { writes, result: undefined };
      }),
    );
  }

  /**
   * The key's meta. Its MAC is checked when its bytes differ from the ones last checked for that key (the
   * same bytes carry the same meta), so a hot key is not checked again on every read.
   */
  private async meta(namespace: string, key: string): Promise<KeyMeta | undefined> {
    const mKey = metaKey(namespace, key);
    const bytes = await this.deps.storage.get(mKey);
    if (!bytes) return undefined;
    try {
      return this.openMeta(mKey, bytes);
    } catch (err) {
      throw this.indexError({ namespace, key }, err);
    }
  }

  /**
   * A key's index and, where the storage is remote, its newest version record, read together in one query
   * (`newest`: the record of the version the index names as the latest, when that is the newest stored).
   * There, a version record newer than the index promises — the index put back to an older copy — is a
   * 500 integrity_error, never the older version. On an embedded store two plain reads are cheaper than
   * the cursor this needs, and a replayed index is found by the next write to the key instead.
   */
  private async metaAndNewest(
    namespace: string,
    key: string,
  ): Promise<{ meta: KeyMeta; newest: Uint8Array | undefined } | undefined> {
    if (!this.deps.storage.remote) {
      const meta = await this.meta(namespace, key);
      return meta && { meta, newest: undefined };
    }
    const mKey = metaKey(namespace, key);
    const { value, last } = await this.deps.storage.getWithLast(mKey, versionRange(namespace, key));
    if (!value) return undefined;
    const where = { namespace, key };
    const meta = await this.checked(where, async () => this.openMeta(mKey, value));
    const newest = last && versionOf(last.key);
    if (newest !== undefined && newest > meta.latest)
      throw this.indexError(
        where,
        new RecordIntegrityError(
          'kv-meta',
          printableKey(mKey),
          `is older than the versions stored (version ${newest} exists)`,
        ),
      );
    return { meta, newest: newest === meta.latest ? last!.value : undefined };
  }

  /** The meta in `bytes` stored at `mKey`, MAC-checked unless they are the bytes last checked for that key. */
  private openMeta(mKey: Buffer, bytes: Uint8Array): KeyMeta {
    return this.checkedMeta.get(mKey.toString('latin1'), bytes, () =>
      unpackMeta(this.deps.seal, mKey, bytes),
    );
  }

  /** `work`, with a key index or counter record that fails its MAC answered as 500 integrity_error (logged). */
  private async checked<T>(
    where: { namespace: string; key: string },
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw this.indexError(where, err);
    }
  }

  /** `err`, or for a record that failed its MAC the 500 integrity_error that reports it. */
  private indexError(where: { namespace: string; key: string }, err: unknown): unknown {
    if (!(err instanceof RecordIntegrityError)) return err;
    return this.integrityError(
      { ...where, version: 0 },
      `${err.kind} record at ${err.storageKey} ${err.problem}`,
    );
  }

  private async readExisting(
    caller: Principal,
    namespace: string,
    key: string,
    meta: KeyMeta,
    wanted: number | undefined,
    /** The latest version's record, when it was read with the index. */
    latestRecord?: Uint8Array,
  ): Promise<Entry> {
    if (!caller.access.may('read', namespace, meta.type))
      throw forbidden(`read ${meta.type} values in ${namespace}`);
    const version = wanted ?? meta.latest;
    if (version < meta.first || version > meta.latest) throw notFound('no such version');
    const where = { namespace, key, version };
    const bytes =
      version === meta.latest && latestRecord !== undefined
        ? latestRecord
        : await this.deps.storage.get(versionKey(namespace, key, version));
    const record = bytes && unpackVersion(bytes);
    if (!record) throw this.integrityError(where, 'version record missing or unreadable');
    if (!caller.access.may('read', namespace, record.type))
      throw forbidden(`read ${record.type} values in ${namespace}`);
    const id: RecordIdentity = { ...where, type: record.type };
    const keyVersion = record.type === 'secret' ? record.sealed.keyVersion : record.seal.keyVersion;
    // A record sealed under a keyring version this process has not loaded yet: another process rotated.
    if (!this.deps.keyring.current().has(keyVersion)) await this.deps.keyring.refresh();
    const keyring = this.deps.keyring.current();
    let value: string;
    try {
      if (record.type === 'secret') value = openSecret(keyring, id, record.sealed);
      else {
        verifyConfig(keyring, id, record.value, record.seal);
        value = record.value;
      }
    } catch (err) {
      if (err instanceof SealedDataError)
        throw this.integrityError(where, `${record.type} value failed to open or verify`);
      throw err;
    }
    return { namespace, key, version, type: record.type, value, created_at: iso(record.createdAt) };
  }

  private integrityError(
    where: { namespace: string; key: string; version: number },
    reason: string,
  ): AppError {
    this.deps.onIntegrityError(where, reason);
    return new AppError(
      'integrity_error',
      'the stored value failed its integrity check and was not returned',
    );
  }
}
