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
import { type KeyMeta, marksFrom, packMeta, packVersion, type VersionRecord } from './kv-format.js';
import { metaKey, versionKey } from './layout.js';
import type { RecordSeal } from './record-seal.js';

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
  v: VersionIdentity & { readonly value: string; readonly createdAt: number },
): Buffer {
  const id: RecordIdentity = {
    namespace: v.namespace,
    key: v.key,
    version: v.version,
    type: v.type,
  };
  const record: VersionRecord =
    v.type === 'secret'
      ? { type: v.type, createdAt: v.createdAt, sealed: sealSecret(keyring, id, v.value) }
      : {
          type: v.type,
          createdAt: v.createdAt,
          value: v.value,
          seal: sealConfig(keyring, id, v.value),
        };
  return packVersion(record);
}

/**
 * The versions a write of `version` prunes from a key that keeps at most `maxVersions` (none without a
 * limit), and the oldest version kept after it.
 */
export function pruning(
  previous: KeyMeta | undefined,
  version: number,
): { first: number; pruned: number[] } {
  const first = previous ? previous.first : version;
  const max = previous?.maxVersions;
  if (!max || version - first + 1 <= max) return { first, pruned: [] };
  const kept = version - max + 1;
  // A version destroyed alone is already gone: it is not pruned again.
  const pruned = Array.from({ length: kept - first }, (_, i) => first + i).filter(
    (v) => !previous?.destroyedVersions?.has(v),
  );
  return { first: kept, pruned };
}

/**
 * The writes that add version record `packed` as `v`, after `previous` (the key's index, if it exists: its
 * metadata goes on, and versions beyond its limit are pruned, oldest first).
 */
export function versionWrites(
  seal: RecordSeal,
  v: VersionIdentity & { readonly previous: KeyMeta | undefined },
  packed: Buffer,
): StorageWrite[] {
  const { first, pruned } = pruning(v.previous, v.version);
  const meta: KeyMeta = {
    latest: v.version,
    type: v.type,
    first,
    ...(v.previous?.custom ? { custom: v.previous.custom } : {}),
    ...(v.previous?.maxVersions ? { maxVersions: v.previous.maxVersions } : {}),
    ...(v.previous?.casRequired ? { casRequired: true as const } : {}),
    ...marksFrom(v.previous, first),
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
