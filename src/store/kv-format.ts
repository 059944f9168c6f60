/**
 * The stored forms of a key's meta, its version counter and one version, packed with msgpack. Version
 * records carry a format number so later formats can be told apart, and are sealed or MACed themselves
 * (crypto/envelope.ts); the meta and the counter carry a MAC with their storage key bound in
 * (store/record-seal.ts), so the index that decides who sees a key cannot be changed by hand.
 */
import { Packr } from 'msgpackr';
import type { ConfigSeal, RecordIdentity, SealedSecret } from '../crypto/envelope.js';
import type { ValueType } from '../model/value-types.js';
import { packUint32, unpackUint32 } from '../storage/uint32.js';
import { MAC_BYTES, type RecordSeal } from './record-seal.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A key: its namespace and name. */
export interface KeyRef {
  readonly namespace: string;
  readonly key: string;
}

export interface KeyMeta {
  /** Latest version. */
  readonly latest: number;
  /** Type of the latest version: it decides who may see the key. */
  readonly type: ValueType;
  /** The oldest version it keeps (after a destroy, numbering goes on from the counter). */
  readonly first: number;
  /** The key's own metadata: a bounded map of strings (model/key-metadata.ts); absent when empty. */
  readonly custom?: Readonly<Record<string, string>>;
  /** Versions kept at the most: a write beyond them prunes the oldest; absent for no limit. */
  readonly maxVersions?: number;
  /** Every write must name the version it replaces (check-and-set); absent when not required. */
  readonly casRequired?: true;
  /**
   * New versions are deleted this long (ms) after they are written (Vault's `delete_version_after`): each
   * is marked in `deletedVersions` for its time when written; absent for none.
   */
  readonly deleteAfter?: number;
  /**
   * Versions deleted one by one (kept, not read until undeleted): when each was, or will be, in ms since
   * the epoch. A time still to come is not a deletion yet (`deletedAt`). The latest version of a live key
   * is marked only for a time (`deleteAfter`): deleting it deletes the key (the trash), and once its time
   * has come the key reads and lists as deleted (`expiredAt`).
   */
  readonly deletedVersions?: ReadonlyMap<number, number>;
  /** Versions destroyed one by one (their records erased): when each was written, and its type. */
  readonly destroyedVersions?: ReadonlyMap<number, DestroyedVersion>;
}

/** What a key's index keeps of a version destroyed alone: when it was written, and its type. */
export interface DestroyedVersion {
  readonly createdAt: number;
  readonly type: ValueType;
}

/** The most versions a key's index marks deleted or destroyed one by one, together. */
export const MARKED_VERSIONS_LIMIT = 1000;

/**
 * The most versions a key keeps while its versions are deleted after a time: each is marked for it, and
 * the marks are bounded (MARKED_VERSIONS_LIMIT); a write beyond it prunes the oldest, as `maxVersions` does.
 */
export const TIMED_VERSIONS_LIMIT = MARKED_VERSIONS_LIMIT;

/** When version `version` was deleted, once it is: a mark whose time is still to come is not a deletion. */
export function deletedAt(meta: KeyMeta, version: number, now: number): number | undefined {
  const at = meta.deletedVersions?.get(version);
  return at !== undefined && at <= now ? at : undefined;
}

/**
 * When a live key's latest version was deleted by its time (`deleteAfter`), once it is: the key then reads
 * and lists as deleted, its versions kept, until it is undeleted or written again.
 */
export function expiredAt(meta: KeyMeta, now: number): number | undefined {
  return meta.deletedVersions === undefined ? undefined : deletedAt(meta, meta.latest, now);
}

/**
 * The marks of `meta` on versions from `first` on (those below it are pruned): what an index written after
 * it carries on.
 */
export function marksFrom(
  meta: KeyMeta | undefined,
  first: number,
): Pick<KeyMeta, 'deletedVersions' | 'destroyedVersions'> {
  const from = <T>(marks: ReadonlyMap<number, T> | undefined) => {
    if (!marks?.size) return undefined;
    const kept = new Map([...marks].filter(([v]) => v >= first));
    return kept.size > 0 ? kept : undefined;
  };
  const deletedVersions = from(meta?.deletedVersions);
  const destroyedVersions = from(meta?.destroyedVersions);
  return {
    ...(deletedVersions ? { deletedVersions } : {}),
    ...(destroyedVersions ? { destroyedVersions } : {}),
  };
}

/** A key in the trash: its index as it was when deleted, and when that was (ms since the epoch). */
export interface TrashedKey extends KeyMeta {
  readonly deletedAt: number;
}

/**
 * The deleted key's record that a write of `type` takes on, when it does: one holding versions always (they
 * go on under the new index); metadata kept before a first version (Vault's metadata alone) only when it
 * was kept for a value of that type — whoever kept it may have had no right over a value of another.
 */
export function takenOnBy(
  trashed: TrashedKey | undefined,
  type: ValueType,
): TrashedKey | undefined {
  if (trashed === undefined) return undefined;
  return trashed.first <= trashed.latest || trashed.type === type ? trashed : undefined;
}

export type VersionRecord = (
  | {
      readonly type: 'config';
      readonly createdAt: number;
      readonly value: string;
      readonly seal: ConfigSeal;
    }
  | { readonly type: 'secret'; readonly createdAt: number; readonly sealed: SealedSecret }
) & {
  /** Its writer could read every value of its namespace (RecordIdentity.writerReadsAll); absent: not. */
  readonly writerReadsAll?: true;
};

/** The identity a version record is sealed or MACed under, as its AAD binds it (crypto/envelope.ts). */
export function recordIdentity(
  where: { readonly namespace: string; readonly key: string; readonly version: number },
  record: VersionRecord,
): RecordIdentity {
  return {
    namespace: where.namespace,
    key: where.key,
    version: where.version,
    type: record.type,
    ...(record.writerReadsAll ? { writerReadsAll: true } : {}),
  };
}

const FORMAT = 1;

/** A key's index as packed: the optional fields only when set, so an index without them is as it was. */
function packedIndex(meta: KeyMeta): Record<string, unknown> {
  return {
    l: meta.latest,
    t: meta.type,
    f: meta.first,
    ...(meta.custom && Object.keys(meta.custom).length > 0 ? { c: meta.custom } : {}),
    ...(meta.maxVersions ? { mv: meta.maxVersions } : {}),
    ...(meta.casRequired ? { cr: 1 } : {}),
    ...(meta.deleteAfter ? { da: meta.deleteAfter } : {}),
    ...(meta.deletedVersions?.size ? { vd: [...meta.deletedVersions] } : {}),
    ...(meta.destroyedVersions?.size
      ? { vx: [...meta.destroyedVersions].map(([v, d]) => [v, d.createdAt, d.type]) }
      : {}),
  };
}

export function packMeta(seal: RecordSeal, storageKey: Uint8Array, meta: KeyMeta): Buffer {
  return seal.authenticate('kv-meta', storageKey, packr.pack(packedIndex(meta)));
}

/** The meta stored at `storageKey`; throws RecordIntegrityError unless its MAC matches. */
export function unpackMeta(seal: RecordSeal, storageKey: Uint8Array, bytes: Uint8Array): KeyMeta {
  return metaOf(seal.verified('kv-meta', storageKey, bytes));
}

/**
 * The meta without checking its MAC: only for reports made without the master key. A deleted key's
 * record in the trash (packTrashed) reads as the index it keeps.
 */
export function peekMeta(bytes: Uint8Array): KeyMeta | undefined {
  try {
    return bytes.byteLength > MAC_BYTES ? metaOf(bytes.subarray(MAC_BYTES)) : undefined;
  } catch {
    return undefined;
  }
}

function metaOf(packed: Uint8Array): KeyMeta {
  const m = packr.unpack(packed) as {
    l: number;
    t: ValueType;
    f: number;
    c?: Record<string, string>;
    mv?: number;
    cr?: number;
    da?: number;
    vd?: unknown;
    vx?: unknown;
  };
  // Most indexes mark no version: nothing to build for them.
  const deleted = pairsOf(m.vd, (e) => (typeof e[1] === 'number' ? e[1] : undefined));
  const destroyed = pairsOf(m.vx, (e) =>
    typeof e[1] === 'number' && (e[2] === 'secret' || e[2] === 'config')
      ? { createdAt: e[1], type: e[2] as ValueType }
      : undefined,
  );
  return {
    latest: m.l,
    type: m.t,
    first: m.f,
    ...(m.c && typeof m.c === 'object' ? { custom: m.c } : {}),
    ...(typeof m.mv === 'number' ? { maxVersions: m.mv } : {}),
    ...(m.cr === 1 ? { casRequired: true as const } : {}),
    ...(typeof m.da === 'number' && m.da > 0 ? { deleteAfter: m.da } : {}),
    ...(deleted.size > 0 ? { deletedVersions: deleted } : {}),
    ...(destroyed.size > 0 ? { destroyedVersions: destroyed } : {}),
  };
}

/** A packed list of `[version, …]` entries as a map by version; an entry that does not parse is left out. */
function pairsOf<T>(list: unknown, value: (entry: unknown[]) => T | undefined): Map<number, T> {
  const out = new Map<number, T>();
  if (list === undefined || !Array.isArray(list)) return out;
  for (const entry of list) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'number') continue;
    const v = value(entry);
    if (v !== undefined) out.set(entry[0], v);
  }
  return out;
}

export function packTrashed(seal: RecordSeal, storageKey: Uint8Array, key: TrashedKey): Buffer {
  return seal.authenticate(
    'kv-trash',
    storageKey,
    packr.pack({ ...packedIndex(key), d: key.deletedAt }),
  );
}

/** The deleted key's record stored at `storageKey`; throws RecordIntegrityError unless its MAC matches. */
export function unpackTrashed(
  seal: RecordSeal,
  storageKey: Uint8Array,
  bytes: Uint8Array,
): TrashedKey {
  const packed = seal.verified('kv-trash', storageKey, bytes);
  const m = packr.unpack(packed) as { d: number };
  return { ...metaOf(packed), deletedAt: m.d };
}

/** The version counter of a key: the last version number ever assigned. */
export function packCounter(seal: RecordSeal, storageKey: Uint8Array, version: number): Buffer {
  return seal.authenticate('kv-counter', storageKey, packUint32(version));
}

/** The counter stored at `storageKey` (0 when there is none); throws RecordIntegrityError unless its MAC matches. */
export function unpackCounter(
  seal: RecordSeal,
  storageKey: Uint8Array,
  bytes: Uint8Array | undefined,
): number {
  return bytes === undefined ? 0 : unpackUint32(seal.verified('kv-counter', storageKey, bytes));
}

export function packVersion(record: VersionRecord): Buffer {
  if (record.type === 'config') {
    return packr.pack({
      f: FORMAT,
      t: 'config',
      at: record.createdAt,
      v: record.value,
      kv: record.seal.keyVersion,
      m: record.seal.mac,
      ...(record.writerReadsAll ? { w: 1 } : {}),
    });
  }
  const s = record.sealed;
  return packr.pack({
    f: FORMAT,
    t: 'secret',
    at: record.createdAt,
    kv: s.keyVersion,
    wn: s.wrapNonce,
    wk: s.wrappedKey,
    n: s.nonce,
    c: s.ciphertext,
    ...(record.writerReadsAll ? { w: 1 } : {}),
  });
}

/** Reads a version record; returns undefined when it is not a well-formed record of a known format. */
export function unpackVersion(bytes: Uint8Array): VersionRecord | undefined {
  let r: Record<string, unknown>;
  try {
    r = packr.unpack(bytes) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (r?.f !== FORMAT || typeof r.at !== 'number' || typeof r.kv !== 'number') return undefined;
  const mark = r.w === 1 ? { writerReadsAll: true as const } : {};
  if (r.t === 'config' && typeof r.v === 'string' && r.m instanceof Uint8Array) {
    return {
      type: 'config',
      createdAt: r.at,
      value: r.v,
      seal: { keyVersion: r.kv, mac: r.m },
      ...mark,
    };
  }
  const bin = (name: string): Uint8Array | undefined =>
    r[name] instanceof Uint8Array ? (r[name] as Uint8Array) : undefined;
  const [wn, wk, n, c] = [bin('wn'), bin('wk'), bin('n'), bin('c')];
  if (r.t === 'secret' && wn && wk && n && c && !('v' in r)) {
    return {
      type: 'secret',
      createdAt: r.at,
      sealed: { keyVersion: r.kv, wrapNonce: wn, wrappedKey: wk, nonce: n, ciphertext: c },
      ...mark,
    };
  }
  return undefined;
}

/** A key whose version numbers are used up (2^32 - 1 versions). */
export class VersionsUsedUpError extends Error {
  constructor() {
    super('this key has used up its version numbers');
    this.name = 'VersionsUsedUpError';
  }
}
