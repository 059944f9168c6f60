/**
 * The keyring: versioned key-encryption keys. Each version's 32-byte root key never encrypts data itself;
 * HKDF derives one subkey per purpose (wrapping data keys, MACing config values), so the two uses can never
 * be confused. The whole keyring is wrapped by the master key provider and unwrapped once at start-up.
 *
 * Besides its versions the keyring holds one audit root key, never rotated (audit checkpoints made under
 * it must stay verifiable for as long as the log is kept); HKDF derives the checkpoint MAC key from it.
 *
 * It records the generation it was stored as (`epoch`), which only grows: a process that has seen a keyring
 * never accepts an older one.
 *
 * It also holds the ids of revoked tokens until they expire (with their expiry): the token records say
 * so too, but they live in storage, where an older copy from before the revocation could be put back;
 * the keyring is authenticated by the master key, so a replayed token record is recognised and refused.
 *
 * Invariants: versions only grow; a version is never removed while a record names it (key management
 * issue: rewrap/retire); the active version is the one new records use.
 */
import { hkdfSync, timingSafeEqual } from 'node:crypto';
import { pack, unpack } from 'msgpackr';
import { KEY_BYTES } from './aead.js';
import { randomBytes } from './random.js';

export type KeyPurpose = 'wrap-data-key' | 'mac-config';

interface KeyVersion {
  readonly version: number;
  readonly key: Uint8Array;
  readonly createdAt: number;
}

/** A token revocation as the keyring records it. */
export interface Revocation {
  readonly revokedAt: number;
  readonly expiresAt: number;
}

interface KeyringState {
  readonly versions: readonly KeyVersion[];
  readonly activeVersion: number;
  readonly auditRoot: Uint8Array | undefined;
  readonly storeFormat: number;
  /** Revoked token ids: when each was revoked, kept until its token's expiry (ms). */
  readonly revoked: ReadonlyMap<string, Revocation>;
  /** SHA-256 of the stored root token record: an older copy put back is told apart from it. */
  readonly rootRecord: Uint8Array | undefined;
  /**
   * The keyring generation this keyring was stored as (store/keyring-store.ts): it only grows, so an older
   * keyring put back is told apart from a newer one. Undefined in keyrings stored before it existed.
   */
  readonly epoch: number | undefined;
}

const FORMAT = 1;
/** The record format new stores are written in (store/upgrade.ts). */
export const STORE_FORMAT = 2;

export class Keyring {
  private readonly byVersion = new Map<number, KeyVersion>();
  private readonly derived = new Map<string, Buffer>();

  private constructor(private readonly state: KeyringState) {
    for (const v of state.versions) this.byVersion.set(v.version, v);
    if (!this.byVersion.has(state.activeVersion))
      throw new Error('keyring: the active version is missing');
  }

  get activeVersion(): number {
    return this.state.activeVersion;
  }

  /** The store's record format (store/upgrade.ts): 1 for stores written before the storage barrier. */
  get storeFormat(): number {
    return this.state.storeFormat;
  }

  private with(changes: Partial<KeyringState>): Keyring {
    return new Keyring({ ...this.state, versions: [...this.byVersion.values()], ...changes });
  }

  static generate(now: number): Keyring {
    return new Keyring({
      versions: [{ version: 1, key: randomBytes(KEY_BYTES), createdAt: now }],
      activeVersion: 1,
      auditRoot: randomBytes(KEY_BYTES),
      storeFormat: STORE_FORMAT,
      revoked: new Map(),
      rootRecord: undefined,
      epoch: undefined,
    });
  }

  static deserialize(bytes: Uint8Array): Keyring {
    const data = unpack(bytes) as {
      f: number;
      a: number;
      k: { v: number; k: Uint8Array; at: number }[];
      x?: Uint8Array;
      s?: number;
      r?: [string, number, number][];
      o?: Uint8Array;
      e?: number;
    };
    if (data?.f !== FORMAT || !Array.isArray(data.k)) throw new Error('keyring: unknown format');
    return new Keyring({
      versions: data.k.map((k) => ({ version: k.v, key: k.k, createdAt: k.at })),
      activeVersion: data.a,
      auditRoot: data.x,
      storeFormat: data.s ?? 1,
      revoked: new Map(
        (data.r ?? []).map(([id, revokedAt, expiresAt]) => [id, { revokedAt, expiresAt }]),
      ),
      rootRecord: data.o,
      epoch: data.e,
    });
  }

  /** A new keyring with one more version, which becomes the active one; every old version stays. */
  rotate(now: number): Keyring {
    const next = Math.max(...this.byVersion.keys()) + 1;
    return this.with({
      versions: [
        ...this.byVersion.values(),
        { version: next, key: randomBytes(KEY_BYTES), createdAt: now },
      ],
      activeVersion: next,
    });
  }

  /** A new keyring without the given versions; the active version can never be dropped. */
  without(versions: readonly number[]): Keyring {
    if (versions.includes(this.activeVersion))
      throw new Error('keyring: the active version cannot be retired');
    return this.with({
      versions: [...this.byVersion.values()].filter((v) => !versions.includes(v.version)),
    });
  }

  serialize(): Uint8Array {
    const k = [...this.byVersion.values()].map((v) => ({
      v: v.version,
      k: v.key,
      at: v.createdAt,
    }));
    const { revoked, auditRoot, rootRecord, epoch } = this.state;
    const r =
      revoked.size === 0
        ? {}
        : { r: [...revoked].map(([id, v]) => [id, v.revokedAt, v.expiresAt]) };
    return pack({
      f: FORMAT,
      a: this.activeVersion,
      k,
      ...(auditRoot === undefined ? {} : { x: auditRoot }),
      s: this.storeFormat,
      ...r,
      ...(rootRecord === undefined ? {} : { o: rootRecord }),
      ...(epoch === undefined ? {} : { e: epoch }),
    });
  }

  /** The keyring generation it was stored as; undefined for a keyring stored before epochs existed. */
  get epoch(): number | undefined {
    return this.state.epoch;
  }

  /** This keyring, as stored at generation `epoch`. */
  withEpoch(epoch: number): Keyring {
    return this.with({ epoch });
  }

  /** False for keyrings made before the audit log existed; KeyringHolder adds the key on open. */
  get hasAuditKey(): boolean {
    return this.state.auditRoot !== undefined;
  }

  /** This keyring with an audit root key (a new random one if it has none). */
  withAuditKey(): Keyring {
    return this.state.auditRoot !== undefined
      ? this
      : this.with({ auditRoot: randomBytes(KEY_BYTES) });
  }

  /** Every revocation the keyring records (until each token's expiry). */
  revocations(): ReadonlyMap<string, Revocation> {
    return this.state.revoked;
  }

  /** When token `id` was revoked, if the keyring records it (until the token's expiry). */
  revocationOf(id: string): Revocation | undefined {
    return this.state.revoked.get(id);
  }

  /**
   * This keyring, recording that token `id` (expiring at `expiresAt`) was revoked at `revokedAt`; ids whose
   * tokens have expired by then are dropped (an expired token is refused whatever its record says, and a
   * token's expiry is the same in every copy of its record), so the list holds at most the revocations of
   * one maximum token lifetime.
   */
  withRevoked(id: string, revocation: Revocation): Keyring {
    const revoked = new Map(
      [...this.state.revoked].filter(([, r]) => r.expiresAt > revocation.revokedAt),
    );
    revoked.set(id, revocation);
    return this.with({ revoked });
  }

  /** This keyring, recording that the store's records are now in `format`. */
  withStoreFormat(format: number): Keyring {
    return this.with({ storeFormat: format });
  }

  /** SHA-256 of the root token record the store should hold, once one was recorded. */
  get rootRecord(): Uint8Array | undefined {
    return this.state.rootRecord;
  }

  /** This keyring, naming `digest` (SHA-256 of the stored record) as the root token record. */
  withRootRecord(digest: Uint8Array): Keyring {
    return this.with({ rootRecord: digest });
  }

  /**
   * The keys that seal and authenticate the store's own records (store/record-seal.ts). Derived from the
   * same permanent root as the audit key, and like it never rotated: see SECURITY.md.
   */
  recordKeys(): { seal: Buffer; mac: Buffer } {
    return { seal: this.permanentSubkey('record-seal'), mac: this.permanentSubkey('record-mac') };
  }

  /** HKDF of the permanent root key (the audit root) for `purpose`. */
  private permanentSubkey(
    purpose:
      | 'audit-checkpoint'
      | 'audit-link'
      | 'audit-signing'
      | 'record-seal'
      | 'record-mac'
      | 'snapshot-mac',
  ): Buffer {
    const root = this.state.auditRoot;
    if (root === undefined) throw new Error('keyring: no permanent root key');
    let key = this.derived.get(purpose);
    if (!key) {
      key = Buffer.from(
        hkdfSync('sha256', root, new Uint8Array(0), `coffer ${purpose} v1`, KEY_BYTES),
      );
      this.derived.set(purpose, key);
    }
    return key;
  }

  /**
   * Whether `other` has this keyring's permanent root key (compared in constant time): a later keyring of
   * the same store does, whatever was rotated or retired. True while this one has none yet (a store from
   * before the audit log, until its first open gives it one).
   */
  sharesRootWith(other: Keyring): boolean {
    const mine = this.state.auditRoot;
    const theirs = other.state.auditRoot;
    if (mine === undefined) return true;
    return (
      theirs !== undefined && theirs.byteLength === mine.byteLength && timingSafeEqual(theirs, mine)
    );
  }

  /** The key that authenticates snapshots of the store (store/snapshot.ts). */
  snapshotKey(): Buffer {
    return this.permanentSubkey('snapshot-mac');
  }

  /** The key of the audit checkpoints' MACs in chains written before 2026-11-24 (audit format 1). */
  auditKey(): Buffer {
    return this.permanentSubkey('audit-checkpoint');
  }

  /** The HMAC key that links each audit line to the one before it (audit/entry.ts). */
  auditLinkKey(): Buffer {
    return this.permanentSubkey('audit-link');
  }

  /** The seed of the Ed25519 key that signs audit checkpoints (its public key is published). */
  auditSigningSeed(): Buffer {
    return this.permanentSubkey('audit-signing');
  }

  has(version: number): boolean {
    return this.byVersion.has(version);
  }

  /** When the active version was created (ms since the epoch). */
  get activeCreatedAt(): number {
    return this.byVersion.get(this.activeVersion)!.createdAt;
  }

  versions(): { version: number; createdAt: number }[] {
    return [...this.byVersion.values()].map(({ version, createdAt }) => ({ version, createdAt }));
  }

  /** The subkey for `purpose` under keyring `version`; undefined when the version is unknown. */
  subkey(version: number, purpose: KeyPurpose): Buffer | undefined {
    const id = `${version}:${purpose}`;
    let key = this.derived.get(id);
    if (!key) {
      const root = this.byVersion.get(version);
      if (!root) return undefined;
      key = Buffer.from(
        hkdfSync('sha256', root.key, new Uint8Array(0), `coffer ${purpose} v1`, KEY_BYTES),
      );
      this.derived.set(id, key);
    }
    return key;
  }
}
