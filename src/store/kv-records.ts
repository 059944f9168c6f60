/**
 * The key-value records: each key's index (`M`: latest version — its counter while it exists —, the
 * latest type, the first version it keeps), a deleted key's counter (`C`), a deleted key's index as it was
 * (`D`: the trash) and the version records (`V`), as store/layout.ts places them. The kv service reaches
 * them only through here.
 *
 * A delete moves the key's index to the trash and keeps its versions: every place that reads indexes
 * (reads, listings, namespaces, waits) sees no key, as before; a version of it can still be read by
 * number, and undelete moves the index back. A write to a deleted key takes its versions on (numbering
 * goes on, as after every delete) and empties its place in the trash. Destroy erases the versions, the
 * index and the trash record for good; only the counter stays.
 *
 * Invariants kept here, for every backend alike:
 * - An index or counter that fails its MAC is a RecordIntegrityError, never a changed answer.
 * - Version numbers only grow, and a key's versions are contiguous from its first to its latest. So a
 *   version record newer than the index promises means the index was put back to an older copy: a read
 *   that meets it fails (RecordIntegrityError), and so does a write (which would otherwise overwrite it).
 *   The read finds it by reading the index and the key's newest version record together, from one state.
 */
import {
  hasChangeFeed,
  type KeyRange,
  type StorageBackend,
  type StorageWrite,
} from '../storage/backend.js';
import { withEvents } from './event-log.js';
import type { KeyringHolder } from './keyring-store.js';
import { GENERATION_KEY } from './keyring-store.js';
import {
  type KeyMeta,
  type KeyRef,
  peekMeta,
  takenOnBy,
  unpackCounter,
  unpackMeta,
  unpackTrashed,
  unpackVersion,
  type VersionRecord,
  VersionsUsedUpError,
} from './kv-format.js';
import { KvKeyMetadata } from './kv-key-metadata.js';
import { KvLatest, type Latest, MAX_VERSION } from './kv-latest.js';
import { KvTrash } from './kv-trash.js';
import { KvVersionMarks } from './kv-version-marks.js';
import {
  type AppendedVersion,
  type NewVersion,
  pruning,
  versionWrites,
} from './kv-version-writes.js';
import { LastOpened } from './last-opened.js';
import {
  counterKey,
  descendantsRange,
  keysRange,
  METAS_RANGE,
  metaKey,
  parseMetaKey,
  parseVersionKey,
  subtreeRange,
  trashKey,
  VERSIONS_RANGE,
  versionKey,
  versionOf,
  versionRange,
} from './layout.js';
import { printableKey, RecordIntegrityError, type RecordSeal } from './record-seal.js';

/** A key: its namespace and name. */
export type { KeyRef };

export { VersionsUsedUpError };

/** Writes another store's operation commits with a change (an audit intent's copy): opaque outside store/. */
export type RecordWrite = StorageWrite;

export type { Latest };

/** One stored version record as a whole-store pass meets it; `cursor` continues a pass just after it. */
export interface StoredVersion extends KeyRef {
  readonly version: number;
  readonly bytes: Uint8Array;
  readonly cursor: Uint8Array;
}

export class KvRecords {
  /** Key indexes last checked or written here, by storage key: the same bytes carry the same index. */
  private readonly checked = new LastOpened<KeyMeta>(10_000);
  /** Deleted keys (store/kv-trash.ts). */
  readonly trash: KvTrash;
  /** A key's own metadata and version limit (store/kv-key-metadata.ts). */
  readonly metadata: KvKeyMetadata;
  /** Versions deleted, undeleted and destroyed one by one (store/kv-version-marks.ts). */
  readonly marks: KvVersionMarks;
  /** A key's index read with its newest version (store/kv-latest.ts). */
  private readonly newest: KvLatest;

  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly keyring: Pick<KeyringHolder, 'checkCurrent' | 'guard'>,
  ) {
    const openIndex = (mKey: Uint8Array, bytes: Uint8Array) => this.openMeta(mKey, bytes);
    this.trash = new KvTrash(storage, seal, keyring, openIndex);
    this.metadata = new KvKeyMetadata(storage, seal, keyring, openIndex);
    this.marks = new KvVersionMarks(storage, seal, keyring, openIndex);
    this.newest = new KvLatest(storage, openIndex);
  }

  /** The key's index, or undefined when the key does not exist. */
  async index(ref: KeyRef): Promise<KeyMeta | undefined> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const bytes = await this.storage.get(mKey);
    return bytes && this.openMeta(mKey, bytes);
  }

  /**
   * The key's index and its newest version record, read together from one state of the store (one
   * statement on PostgreSQL); undefined when the key does not exist. A version newer than the index
   * promises is a RecordIntegrityError: the index was put back to an older copy (store/kv-latest.ts).
   */
  latest(ref: KeyRef): Promise<Latest | undefined> {
    this.keyring.guard();
    return this.newest.latest(ref);
  }

  /** `latest` of each of the keys in `namespace`, read together, each checked as `latest` checks it. */
  latestMany(namespace: string, keys: readonly string[]): Promise<(Latest | undefined)[]> {
    this.keyring.guard();
    return this.newest.latestMany(namespace, keys);
  }

  /** Version `version` of the key; undefined when it is missing or does not parse. */
  async version(ref: KeyRef, version: number): Promise<VersionRecord | undefined> {
    this.keyring.guard();
    const bytes = await this.storage.get(versionKey(ref.namespace, ref.key, version));
    return bytes && unpackVersion(bytes);
  }

  /** Every version record of the key, oldest first (`record` undefined where one does not parse). */
  async *versions(
    ref: KeyRef,
  ): AsyncIterable<{ version: number; record: VersionRecord | undefined }> {
    this.keyring.guard();
    for await (const entry of this.storage.scan(versionRange(ref.namespace, ref.key)))
      yield { version: versionOf(entry.key), record: unpackVersion(entry.value) };
  }

  /**
   * Stores the key's next version in one transaction: checks the keyring generation, assigns the next
   * number, writes the record and the index. The value is sealed before the transaction for the number
   * the index (or a deleted key's counter) promises now, so the shared write lock is not held while
   * sealing; only if another write took that number meanwhile is it sealed again inside.
   */
  async append(ref: KeyRef, v: NewVersion): Promise<AppendedVersion> {
    this.keyring.guard();
    const mKey = metaKey(ref.namespace, ref.key);
    const cKey = counterKey(ref.namespace, ref.key);
    // What the index and counter hold now (read together: one statement on a remote store); the
    // transaction reads them again under its locks. The counter counts only where there is no index.
    const [metaNow, counterRead] = await Promise.all([
      this.storage.get(mKey),
      this.storage.get(cKey),
    ]);
    const counterNow = metaNow ? undefined : counterRead;
    const lastAssigned = (meta: KeyMeta | undefined, counter: Uint8Array | undefined): number =>
      meta?.latest ?? unpackCounter(this.seal, cKey, counter);
    const next = lastAssigned(metaNow && this.openMeta(mKey, metaNow), counterNow) + 1;
    if (next > MAX_VERSION) throw new VersionsUsedUpError();
    const sealedAhead = v.seal(next);
    const promised = versionKey(ref.namespace, ref.key, next);
    const dKey = trashKey(ref.namespace, ref.key);
    /** What the plan writes (its last run's, which is the one committed). */
    let planned: readonly StorageWrite[] = [];
    const logged = withEvents(
      { seal: this.seal, storage: this.storage },
      [mKey, cKey, GENERATION_KEY, promised, dKey],
      ([metaBytes, counterBytes, generationBytes, promisedBytes, trashBytes]) => {
        this.keyring.checkCurrent(v.stamp, generationBytes);
        const meta = metaBytes && this.openMeta(mKey, metaBytes);
        // A deleted key written again keeps its versions: its new index starts where its old one did.
        const trashed =
          meta || !trashBytes ? undefined : unpackTrashed(this.seal, dKey, trashBytes);
        v.check(meta, trashed);
        const version = lastAssigned(meta, counterBytes) + 1;
        // A record already at the number promised, or a number below it: an older index or counter.
        if (version < next || (version === next && promisedBytes !== undefined))
          throw new RecordIntegrityError(
            meta ? 'kv-meta' : 'kv-counter',
            printableKey(meta ? mKey : cKey),
            `is older than the versions stored (version ${version} exists)`,
          );
        if (version > MAX_VERSION) throw new VersionsUsedUpError();
        const previous = meta ?? takenOnBy(trashed, v.type);
        const writes = versionWrites(
          this.seal,
          { ...ref, version, type: v.type, previous, createdAt: v.createdAt },
          version === next ? sealedAhead : v.seal(version),
        );
        if (trashed) writes.push({ op: 'delete', key: dKey });
        planned = writes;
        const { pruned } = pruning(previous, version);
        const result = { version, created: !meta, pruned, deleteAfter: previous?.deleteAfter };
        const event = { kind: 'kv', operation: 'write', ...ref, version, type: v.type } as const;
        const events = [{ ...event, actor: v.actor }];
        return { writes: [...writes, ...v.alongside], result, events };
      },
      // Read just now; a remote store then need not read them again to learn what the plan writes (a
      // deleted key written again is the rare case that costs it a second run).
      [metaNow, counterNow, v.stamp.bytes, undefined, undefined],
    );
    const appended = await this.storage.atomic(...logged);
    // The next write of the key (an overwrite) reads these very bytes back: MACed here, they need no check.
    for (const w of planned)
      if (w.op === 'put' && Buffer.compare(w.key, mKey) === 0) {
        const meta = peekMeta(w.value);
        if (meta) this.checked.remember(Buffer.from(mKey).toString('latin1'), w.value, meta);
      }
    return appended;
  }

  /**
   * The keys directly in `namespace` (those whose names start with `prefix`), in code-point order, from
   * just after `after`, with their indexes.
   */
  async *keysIn(
    namespace: string,
    after?: string,
    prefix = '',
  ): AsyncIterable<{ key: string; meta: KeyMeta }> {
    this.keyring.guard();
    for await (const entry of this.storage.scan(keysRange(namespace, after, prefix)))
      yield { key: parseMetaKey(entry.key).key, meta: this.openMeta(entry.key, entry.value) };
  }

  /**
   * The next `limit` child namespaces of `namespace` (those whose names start with `prefix`) after `after`,
   * whatever lies in them: one storage call.
   */
  async children(
    namespace: string,
    after: string | undefined,
    limit: number,
    prefix = '',
  ): Promise<string[]> {
    this.keyring.guard();
    const range: KeyRange & { limit: number } = {
      ...descendantsRange(namespace, after, prefix),
      limit,
    };
    const segments = await this.storage.segments(descendantsRange(namespace).start, range);
    return segments.map((segment) => Buffer.from(segment).toString('latin1'));
  }

  /** Every key in `namespace` and beneath it, in order, with its index; stopping early stops reading. */
  async *subtree(namespace: string): AsyncIterable<KeyRef & { meta: KeyMeta }> {
    this.keyring.guard();
    for await (const entry of this.storage.scan(subtreeRange(namespace)))
      yield { ...parseMetaKey(entry.key), meta: this.openMeta(entry.key, entry.value) };
  }

  /**
   * Calls `listener` with each key another server writes or deletes (PostgreSQL announces every write of a
   * key's index), and with undefined after a gap in which such news may have been lost; nothing where the
   * storage cannot tell (LMDB: one host, whose processes tell each other). Returns the function that stops it.
   */
  onChange(listener: (ref: KeyRef | undefined) => void): () => void {
    if (!hasChangeFeed(this.storage)) return () => undefined;
    return this.storage.onChange((key) => {
      if (key === undefined) listener(undefined);
      else if (key[0] === METAS_RANGE.start[0]) listener(parseMetaKey(key));
    });
  }

  /** True when any key lies in `namespace` or beneath it. */
  async namespaceExists(namespace: string): Promise<boolean> {
    this.keyring.guard();
    for await (const _ of this.storage.scan({ ...subtreeRange(namespace), limit: 1 })) return true;
    return false;
  }

  /**
   * Every version record of every key in key order, from just after `after` (a cursor this gave), at most
   * `limit`: for the passes over the whole store (seal report, rewrap, audit coverage, keyring status).
   */
  async *everyVersion(
    options: { readonly after?: Uint8Array | null; readonly limit?: number } = {},
  ): AsyncIterable<StoredVersion> {
    const start = options.after
      ? Buffer.concat([options.after, Buffer.from([0])])
      : VERSIONS_RANGE.start;
    const range = {
      start,
      end: VERSIONS_RANGE.end,
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    };
    for await (const entry of this.storage.scan(range))
      yield { ...parseVersionKey(entry.key), bytes: entry.value, cursor: entry.key };
  }

  /** The key's index as stored, without checking its MAC: only for reports made without the master key. */
  async peekIndex(ref: KeyRef): Promise<Uint8Array | undefined> {
    return this.storage.get(metaKey(ref.namespace, ref.key));
  }

  /**
   * The error for version `version` of the key that failed to open, verify or parse (its value is sealed
   * or MACed by the kv service, crypto/envelope.ts): `problem` names what, never the content.
   */
  versionError(ref: KeyRef, version: number, problem: string): RecordIntegrityError {
    return new RecordIntegrityError(
      'kv-version',
      printableKey(versionKey(ref.namespace, ref.key, version)),
      problem,
    );
  }

  /** The index in `bytes` stored at `mKey`, MAC-checked unless they are the bytes last checked there. */
  private openMeta(mKey: Uint8Array, bytes: Uint8Array): KeyMeta {
    return this.checked.get(Buffer.from(mKey).toString('latin1'), bytes, () =>
      unpackMeta(this.seal, mKey, bytes),
    );
  }
}
