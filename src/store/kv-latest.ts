/**
 * A key's index read with its newest version record, from one state of the store (store/kv-records.ts
 * answers `latest` and `latestMany` through here). Versions are numbered without gaps and each is written
 * with the index that counts it, so a version record newer than the index promises means the index was put
 * back to an older copy: the read fails (RecordIntegrityError) rather than answer from it.
 */
import { type FollowingReads, hasFollowingReads, type StorageBackend } from '../storage/backend.js';
import { type KeyMeta, type KeyRef, unpackVersion, type VersionRecord } from './kv-format.js';
import { LastOpened } from './last-opened.js';
import { metaKey, versionKey, versionOf, versionRange } from './layout.js';
import { printableKey, RecordIntegrityError } from './record-seal.js';

/** A key's index and, when it is the newest stored, its latest version's record (read with it). */
export interface Latest {
  readonly meta: KeyMeta;
  /** undefined when the record could not be read with the index, or does not parse. */
  readonly record: VersionRecord | undefined;
}

export const MAX_VERSION = 0xffff_ffff;

/** The keys `latest` reads after a key's index: its latest version, and the one after it. */
function followingKeys(ref: KeyRef, latest: number): Buffer[] {
  return latest < MAX_VERSION
    ? [versionKey(ref.namespace, ref.key, latest), versionKey(ref.namespace, ref.key, latest + 1)]
    : [versionKey(ref.namespace, ref.key, latest)];
}

export class KvLatest {
  /** Newest version records (sealed) last unpacked, by index key: the same bytes, the same read-only record. */
  private readonly unpacked = new LastOpened<VersionRecord | undefined>(10_000);

  constructor(
    private readonly storage: StorageBackend,
    /** A key's index from its stored bytes, checked (KvRecords's, with its cache of checked indexes). */
    private readonly openIndex: (mKey: Uint8Array, bytes: Uint8Array) => KeyMeta,
  ) {}

  /**
   * The key's index and its newest version record, read together from one state of the store (one
   * statement on PostgreSQL); undefined when the key does not exist. A version newer than the index
   * promises is a RecordIntegrityError: the index was put back to an older copy.
   */
  async latest(ref: KeyRef): Promise<Latest | undefined> {
    const mKey = metaKey(ref.namespace, ref.key);
    if (hasFollowingReads(this.storage)) return this.latestFollowing(ref, mKey, this.storage);
    const { value, last } = await this.storage.getWithLast(
      mKey,
      versionRange(ref.namespace, ref.key),
    );
    if (!value) return undefined;
    const meta = this.openIndex(mKey, value);
    const newest = last && versionOf(last.key);
    if (newest !== undefined && newest > meta.latest)
      throw new RecordIntegrityError(
        'kv-meta',
        printableKey(mKey),
        `is older than the versions stored (version ${newest} exists)`,
      );
    const record = newest === meta.latest ? this.unpackLatest(mKey, last!.value) : undefined;
    return { meta, record };
  }

  /**
   * `latest` on a store with local point reads (LMDB): the index, then its latest version and the one after
   * it, from one state — a version after the index's latest means the index was put back. This finds what
   * the range read finds, without a cursor (which cost a secret read about 13% on LMDB).
   */
  private async latestFollowing(
    ref: KeyRef,
    mKey: Buffer,
    storage: FollowingReads,
  ): Promise<Latest | undefined> {
    let meta: KeyMeta | undefined;
    const { followed } = await storage.getFollowing(mKey, (value) => {
      meta = this.openIndex(mKey, value);
      return followingKeys(ref, meta.latest);
    });
    return meta && this.latestOf(mKey, meta, followed);
  }

  /**
   * `latest` of each of the keys in `namespace`, read together: on LMDB in one call from one state, on
   * PostgreSQL as one batch of statements (storage/read-batch.ts). Each is checked as `latest` checks it.
   */
  async latestMany(namespace: string, keys: readonly string[]): Promise<(Latest | undefined)[]> {
    if (!hasFollowingReads(this.storage))
      return Promise.all(keys.map((key) => this.latest({ namespace, key })));
    const mKeys = keys.map((key) => metaKey(namespace, key));
    const metas: (KeyMeta | undefined)[] = [];
    const read = await this.storage.getFollowingMany(mKeys, (value, i) => {
      const meta = this.openIndex(mKeys[i]!, value);
      metas[i] = meta;
      return followingKeys({ namespace, key: keys[i]! }, meta.latest);
    });
    return read.map(({ followed }, i) => {
      const meta = metas[i];
      return meta && this.latestOf(mKeys[i]!, meta, followed);
    });
  }

  /** The index and what was read after it: its latest version, and the one after it that must not exist. */
  private latestOf(
    mKey: Buffer,
    meta: KeyMeta,
    [record, after]: readonly (Uint8Array | undefined)[],
  ): Latest {
    if (after !== undefined)
      throw new RecordIntegrityError(
        'kv-meta',
        printableKey(mKey),
        `is older than the versions stored (version ${meta.latest + 1} exists)`,
      );
    return { meta, record: record === undefined ? undefined : this.unpackLatest(mKey, record) };
  }

  /** The key's newest version record in `bytes`, unpacked unless they are the bytes last unpacked for it. */
  private unpackLatest(mKey: Uint8Array, bytes: Uint8Array): VersionRecord | undefined {
    return this.unpacked.get(Buffer.from(mKey).toString('latin1'), bytes, () =>
      unpackVersion(bytes),
    );
  }
}
