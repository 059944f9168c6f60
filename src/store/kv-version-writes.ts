/**
 * One version of a key as stored: the sealed (or MACed) version record, and the writes that add it — the
 * record and the key's index, whose `latest` is the key's version counter while the key exists (the
 * counter record is written when the key is deleted, so its numbering goes on after it). Used by the kv
 * records inside their transaction, and by bulk loaders that must produce exactly what a real write does.
 */
import { type RecordIdentity, sealConfig, sealSecret } from '../crypto/envelope.js';
import type { Keyring } from '../crypto/keyring.js';
import type { ValueType } from '../model/value-types.js';
import type { StorageWrite } from '../storage/backend.js';
import type { GenerationStamp } from './keyring-store.js';
import {
  type KeyMeta,
  marksFrom,
  packMeta,
  packVersion,
  TIMED_VERSIONS_LIMIT,
  type TrashedKey,
  type VersionRecord,
} from './kv-format.js';
import { metaKey, versionKey } from './layout.js';
import type { RecordSeal } from './record-seal.js';

/** What a new version needs from the kv service: its type, its sealed bytes, and the rights to check. */
export interface NewVersion {
  readonly type: VersionRecord['type'];
  readonly createdAt: number;
  /** The keyring generation the value is sealed under: the write refuses another (StaleKeyringError). */
  readonly stamp: GenerationStamp;
  /** The version record for `version` (sealing binds the number). */
  readonly seal: (version: number) => Buffer;
  /**
   * Called under the write's locks with the key's index (undefined when it has no live key); throws to
   * refuse the write: the caller may not replace a version of that type, or the version is not the one the
   * caller expected (check-and-set). `trashed`: the key is deleted, and the write takes its versions on.
   */
  readonly check: (meta: KeyMeta | undefined, trashed: TrashedKey | undefined) => void;
  /** Committed in the same transaction (the audit intent's copy). */
  readonly alongside: readonly StorageWrite[];
  /** Who writes it (a token id), for its event (store/event-log.ts). */
  readonly actor: string;
}

/** What `append` stored: the version, whether it made the key, what it pruned, when it will be deleted. */
export interface AppendedVersion {
  readonly version: number;
  readonly created: boolean;
  readonly pruned: number[];
  /** The key's versions are deleted this long after they are written (ms), if they are. */
  readonly deleteAfter: number | undefined;
}

/** One version of a key: where it goes and what it holds. */
export interface VersionIdentity {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
}

/** The stored bytes of one version: sealed (secret) or MACed (config) under `keyring`'s active version. */
export function packedVersionRecord(
  keyring: Keyring,
  v: VersionIdentity & {
    readonly value: string;
    readonly createdAt: number;
    /** Its writer may read every value of the namespace (RecordIdentity.writerReadsAll). */
    readonly writerReadsAll?: boolean;
  },
): Buffer {
  const mark = v.writerReadsAll === true ? { writerReadsAll: true as const } : {};
  const id: RecordIdentity = {
    namespace: v.namespace,
    key: v.key,
    version: v.version,
    type: v.type,
    ...mark,
  };
  const record: VersionRecord =
    v.type === 'secret'
      ? { type: v.type, createdAt: v.createdAt, sealed: sealSecret(keyring, id, v.value), ...mark }
      : {
          type: v.type,
          createdAt: v.createdAt,
          value: v.value,
          seal: sealConfig(keyring, id, v.value),
          ...mark,
        };
  return packVersion(record);
}

/**
 * The versions a write of `version` prunes from a key that keeps at most `maxVersions` (none without a
 * limit; TIMED_VERSIONS_LIMIT at the most while its versions are deleted after a time), and the oldest
 * version kept after it.
 */
export function pruning(
  previous: KeyMeta | undefined,
  version: number,
): { first: number; pruned: number[] } {
  const first = previous ? previous.first : version;
  const max = previous?.deleteAfter
    ? Math.min(previous.maxVersions || TIMED_VERSIONS_LIMIT, TIMED_VERSIONS_LIMIT)
    : previous?.maxVersions;
  if (!max || version - first + 1 <= max) return { first, pruned: [] };
  const kept = version - max + 1;
  // A version destroyed alone is already gone: it is not pruned again.
  const pruned = Array.from({ length: kept - first }, (_, i) => first + i).filter(
    (v) => !previous?.destroyedVersions?.has(v),
  );
  return { first: kept, pruned };
}

/**
 * The writes that add version record `packed` as `v`, written at `createdAt`, after `previous` (the key's
 * index, if it exists: its metadata goes on, versions beyond its limit are pruned, oldest first, and with
 * `deleteAfter` the new version is marked for its deletion).
 */
export function versionWrites(
  seal: RecordSeal,
  v: VersionIdentity & { readonly previous: KeyMeta | undefined; readonly createdAt: number },
  packed: Buffer,
): StorageWrite[] {
  const { first, pruned } = pruning(v.previous, v.version);
  const deleteAfter = v.previous?.deleteAfter;
  const marks = marksFrom(v.previous, first);
  const deletedVersions = deleteAfter
    ? new Map(marks.deletedVersions).set(v.version, v.createdAt + deleteAfter)
    : marks.deletedVersions;
  const meta: KeyMeta = {
    latest: v.version,
    type: v.type,
    first,
    ...(v.previous?.custom ? { custom: v.previous.custom } : {}),
    ...(v.previous?.maxVersions ? { maxVersions: v.previous.maxVersions } : {}),
    ...(v.previous?.casRequired ? { casRequired: true as const } : {}),
    ...(deleteAfter ? { deleteAfter } : {}),
    ...marks,
    ...(deletedVersions ? { deletedVersions } : {}),
  };
  const mKey = metaKey(v.namespace, v.key);
  return [
    { op: 'put', key: versionKey(v.namespace, v.key, v.version), value: packed },
    { op: 'put', key: mKey, value: packMeta(seal, mKey, meta) },
    ...pruned.map((old) => ({ op: 'delete' as const, key: versionKey(v.namespace, v.key, old) })),
  ];
}

/** The writes of a version sealed here under `keyring`: what a real write produces (for bulk loaders). */
export function sealedVersionWrites(
  keyring: Keyring,
  seal: RecordSeal,
  v: VersionIdentity & {
    readonly value: string;
    readonly createdAt: number;
    readonly previous: KeyMeta | undefined;
  },
): StorageWrite[] {
  return versionWrites(seal, v, packedVersionRecord(keyring, v));
}
