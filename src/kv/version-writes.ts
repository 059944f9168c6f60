/**
 * The storage writes that add one version of a key: the sealed (or MACed) version record and the key's
 * meta, whose `latest` is the key's version counter while the key exists (the counter record is written
 * when the key is deleted, so its numbering goes on after it). Used by the KV service inside its transaction, and by bulk loaders that
 * must produce exactly what a real write produces.
 */
import { type RecordIdentity, sealConfig, sealSecret } from '../crypto/envelope.js';
import type { Keyring } from '../crypto/keyring.js';
import type { ValueType } from '../model/value-types.js';
import type { StorageWrite } from '../storage/backend.js';
import { metaKey, versionKey } from '../storage/layout.js';
import type { RecordSeal } from '../store/record-seal.js';
import { type KeyMeta, packMeta, packVersion, type VersionRecord } from './records.js';

export interface NewVersion {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  readonly value: string;
  readonly createdAt: number;
  /** The key's meta before this version, if the key exists. */
  readonly previous: KeyMeta | undefined;
}

/** The stored bytes of one version: sealed (secret) or MACed (config) under `keyring`'s active version. */
export function packedVersionRecord(keyring: Keyring, v: Omit<NewVersion, 'previous'>): Buffer {
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
 * The writes for a new version. `packed` is the version record when the caller sealed it already, for
 * exactly this version and keyring; otherwise it is sealed here.
 */
export function versionWrites(
  keyring: Keyring,
  seal: RecordSeal,
  v: NewVersion,
  packed?: Buffer,
): StorageWrite[] {
  const meta: KeyMeta = {
    latest: v.version,
    type: v.type,
    first: v.previous ? v.previous.first : v.version,
  };
  const mKey = metaKey(v.namespace, v.key);
  return [
    {
      op: 'put',
      key: versionKey(v.namespace, v.key, v.version),
      value: packed ?? packedVersionRecord(keyring, v),
    },
    { op: 'put', key: mKey, value: packMeta(seal, mKey, meta) },
  ];
}
