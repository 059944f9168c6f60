/**
 * The keyring in storage. The stored record names the provider that wrapped it and a random instance id;
 * the id goes into the wrap context, so a wrapped keyring only opens as the keyring of this store.
 *
 * Several processes share one store, so every change of the keyring (rotation) bumps a generation number
 * kept under its own small key, MACed under the record key (kind `keyring-generation`). A process holds
 * the keyring of one generation (KeyringHolder); writes read the generation inside their own transaction
 * and refuse to seal under a stale keyring, so once a rotation has committed, no process writes under the
 * old active version again. A running process only ever follows a keyring with the permanent root key it
 * started with: a keyring record replaced by one made elsewhere (another store's, or one an attacker
 * wrapped under a provider the record's settings point to) is refused, not used.
 *
 * A migration (migrate-key) rewraps the same keyring under another master key in one write, so a crash
 * leaves the store openable by exactly one of the two keys. The record names that key (description and
 * non-secret provider settings): start-up says which key it needs, and running processes, which learn of
 * the migration through the generation, open the new provider from those settings and follow.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { pack, unpack } from 'msgpackr';
import { Keyring, type Revocation } from '../crypto/keyring.js';
import { randomBase62, randomBytes } from '../crypto/random.js';
import { type KeyProvider, KeyProviderError } from '../keys/key-provider.js';
import type { ProviderConfig } from '../keys/registry.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { GENERATION_KEY, ROOT_TOKEN_KEY, systemKey } from '../storage/layout.js';
import { packUint32, unpackUint32 } from '../storage/uint32.js';
import { printableKey, RecordIntegrityError, RecordSeal } from './record-seal.js';

interface StoredKeyring {
  readonly provider: string;
  readonly instance: string;
  readonly wrapped: Uint8Array;
  /** Which key wraps it, in words; absent in stores written before migrations existed. */
  readonly description?: string;
  /** The wrapping provider's non-secret settings, for processes following a migration. */
  readonly settings?: ProviderConfig;
  /** How many migrations the store has seen, and when the last one committed. */
  readonly migration?: number;
  readonly migrated_at?: number;
}

/** The provider wrapping the keyring, with what the stored record says about it. */
export interface WrappingKey {
  readonly provider: KeyProvider;
  /** Its non-secret settings, when known (a provider opened from configuration). */
  readonly config?: ProviderConfig;
}

export interface HolderOptions {
  /** Opens the provider a migration moved the keyring to, from the settings the store records. */
  readonly reopen?: (config: ProviderConfig) => Promise<KeyProvider>;
  /**
   * For a store being created: the sealed root token record to store with the new keyring, which names it
   * (auth/root-token.ts), so the one keyring write — one call to the master key — covers both.
   */
  readonly newStoreRoot?: (seal: RecordSeal) => Promise<Uint8Array>;
}

/** What start-up and status show about the key wrapping the keyring. */
export interface WrappingInfo {
  readonly provider: string;
  readonly description: string;
  readonly migrations: number;
  readonly migratedAt: number | null;
}

export const KEYRING_KEY = systemKey('keyring');
export { GENERATION_KEY };

/** The generation record for `generation`, MACed under `keyring`'s record key. */
function packGeneration(keyring: Keyring, generation: number): Buffer {
  return new RecordSeal(() => keyring.recordKeys()).authenticate(
    'keyring-generation',
    GENERATION_KEY,
    packUint32(generation),
  );
}

/**
 * The generation in the stored record `bytes`, read with `keyring` (for its store format) and `seal`;
 * throws RecordIntegrityError unless its MAC matches, or when it is missing (it is written with the
 * keyring, and never deleted). Stores of format 1 kept it as a plain 4-byte number.
 */
function generationIn(bytes: Uint8Array | undefined, keyring: Keyring, seal: RecordSeal): number {
  if (bytes === undefined)
    throw new RecordIntegrityError(
      'keyring-generation',
      printableKey(GENERATION_KEY),
      'is missing',
    );
  if (keyring.storeFormat < 2 && bytes.byteLength === 4) return unpackUint32(bytes);
  return unpackUint32(seal.verified('keyring-generation', GENERATION_KEY, bytes));
}

/** A generation number no process is likely to hold (2^20 .. 2^31), for replacing a damaged record. */
function randomGeneration(): number {
  return 2 ** 20 + (randomBytes(4).readUInt32BE(0) % (2 ** 31 - 2 ** 20));
}

/** A generation as a process holds it: its number and its stored bytes, for a quick compare in transactions. */
export interface GenerationStamp {
  readonly generation: number;
  readonly bytes: Uint8Array;
}

function sha256(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest();
}

/** Thrown inside a write transaction that found a newer keyring generation than the one it sealed with. */
export class StaleKeyringError extends Error {
  constructor() {
    super('the keyring changed since this process loaded it');
    this.name = 'StaleKeyringError';
  }
}

/** The keyring this process uses, and the generation it belongs to. */
export class KeyringHolder {
  /** The seal of the store's own records; its keys come from the permanent root, which never changes. */
  readonly recordSeal: RecordSeal = new RecordSeal(() => this.keyring.recordKeys());

  private constructor(
    private readonly storage: StorageBackend,
    private key: WrappingKey,
    private readonly options: HolderOptions,
    private keyring: Keyring,
    private stamped: GenerationStamp,
    private stored: StoredKeyring,
    readonly instance: string,
  ) {}

  /**
   * Opens the store's keyring, or creates it for a new store. A generation record that fails its MAC is
   * replaced by a new random generation (every process then reloads the keyring, which the master key
   * authenticates) and returned as `replaced`, for the caller to log and audit.
   */
  static async open(
    storage: StorageBackend,
    key: KeyProvider | WrappingKey,
    now: number,
    options: HolderOptions = {},
  ): Promise<{ holder: KeyringHolder; created: boolean; replaced?: RecordIntegrityError }> {
    const wrapping: WrappingKey = 'wrap' in key ? { provider: key } : key;
    const existing = await loadStored(storage, wrapping.provider);
    if (existing) {
      const holder = new KeyringHolder(
        storage,
        wrapping,
        options,
        existing.keyring,
        { generation: 0, bytes: new Uint8Array(0) },
        existing.stored,
        existing.stored.instance,
      );
      let replaced: RecordIntegrityError | undefined;
      try {
        holder.stamped = holder.stampOf(existing.generationBytes);
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
        replaced = err;
        await holder.replaceGeneration(existing.generationBytes);
      }
      // Stores from before the audit log get their audit key once, like any keyring change.
      if (!existing.keyring.hasAuditKey)
        await holder.change((keyring) => (keyring.hasAuditKey ? null : keyring.withAuditKey()));
      return { holder, created: false, ...(replaced ? { replaced } : {}) };
    }

    const generated = Keyring.generate(now);
    const root = await options.newStoreRoot?.(new RecordSeal(() => generated.recordKeys()));
    const keyring = root ? generated.withRootRecord(sha256(root)) : generated;
    const instance = randomBase62(16);
    const stored = await storedRecord(wrapping, keyring, instance, 0, undefined);
    const record = pack(stored);
    const generation = packGeneration(keyring, 1);
    // Another process may have created the keyring meanwhile: then that one wins and is used.
    const created = await storage.atomic([KEYRING_KEY], ([current]) =>
      current
        ? { writes: [], result: false }
        : {
            writes: [
              { op: 'put', key: KEYRING_KEY, value: record },
              { op: 'put', key: GENERATION_KEY, value: generation },
              ...(root ? [{ op: 'put' as const, key: ROOT_TOKEN_KEY, value: root }] : []),
            ],
            result: true,
          },
    );
    if (!created) return KeyringHolder.open(storage, wrapping, now, options);
    return {
      holder: new KeyringHolder(
        storage,
        wrapping,
        options,
        keyring,
        { generation: 1, bytes: generation },
        stored,
        instance,
      ),
      created: true,
    };
  }

  current(): Keyring {
    return this.keyring;
  }

  get generation(): number {
    return this.stamped.generation;
  }

  /** The generation this process holds, to check inside a write transaction with `checkCurrent`. */
  get stamp(): GenerationStamp {
    return this.stamped;
  }

  /**
   * For write transactions: throws StaleKeyringError unless `bytes` (read under GENERATION_KEY in the
   * transaction) is still the generation of `stamp`, RecordIntegrityError if they fail their MAC. The same
   * bytes as the stamp's need no MAC: they are the ones this process checked or wrote.
   */
  checkCurrent(stamp: GenerationStamp, bytes: Uint8Array | undefined): void {
    if (bytes !== undefined && Buffer.compare(stamp.bytes, bytes) === 0) return;
    if (generationIn(bytes, this.keyring, this.recordSeal) !== stamp.generation)
      throw new StaleKeyringError();
  }

  /** Loads the stored keyring again if its generation moved on. */
  async refresh(): Promise<void> {
    const bytes = await this.storage.get(GENERATION_KEY);
    if (bytes !== undefined && Buffer.compare(bytes, this.stamped.bytes) === 0) return;
    const now = this.stampOf(bytes);
    if (now.generation === this.stamped.generation) {
      this.stamped = now; // the same generation in other bytes: format 1's plain number, MACed by the upgrade
      return;
    }
    let followed: WrappingKey = this.key;
    const loaded = await loadStored(this.storage, this.key.provider, async (stored) => {
      followed = await this.follow(stored);
      return followed.provider;
    });
    if (loaded) {
      // Checked before anything is taken over: a refused keyring leaves this process as it was.
      if (!loaded.keyring.sharesRootWith(this.keyring)) {
        throw new RecordIntegrityError(
          'keyring',
          printableKey(KEYRING_KEY),
          'holds a keyring with another permanent root key than the one this process opened, and is not used',
        );
      }
      this.keyring = loaded.keyring;
      this.stamped = this.stampOf(loaded.generationBytes);
      this.stored = loaded.stored;
      this.key = followed;
    }
  }

  /** Replaces the generation record `damaged` (or its absence), unless it changed meanwhile, by a new random generation, and loads it. */
  private async replaceGeneration(damaged: Uint8Array | undefined): Promise<void> {
    const bytes = packGeneration(this.keyring, randomGeneration());
    const unchanged = (now: Uint8Array | undefined): boolean =>
      now === undefined || damaged === undefined
        ? now === damaged
        : Buffer.compare(now, damaged) === 0;
    await this.storage.atomic([GENERATION_KEY], ([now]) => ({
      writes: unchanged(now) ? [{ op: 'put', key: GENERATION_KEY, value: bytes }] : [],
      result: undefined,
    }));
    this.stamped = this.stampOf(await this.storage.get(GENERATION_KEY));
  }

  /** The stamp of the stored generation record `bytes`, read with the current keyring. */
  private stampOf(bytes: Uint8Array | undefined): GenerationStamp {
    return {
      generation: Math.max(generationIn(bytes, this.keyring, this.recordSeal), 1),
      bytes: bytes ?? new Uint8Array(0),
    };
  }

  get providerName(): string {
    return this.key.provider.name;
  }

  /** The key wrapping the keyring as this process last loaded it. */
  wrapping(): WrappingInfo {
    return {
      provider: this.stored.provider,
      description: this.stored.description ?? this.key.provider.description,
      migrations: this.stored.migration ?? 0,
      migratedAt: this.stored.migrated_at ?? null,
    };
  }

  /**
   * Rewraps the keyring under `target` in one write (O(1) in the number of records), after checking that
   * `target` opens what it wrapped. Every process follows on its next keyring load.
   */
  async migrate(target: WrappingKey, now: number): Promise<WrappingInfo> {
    for (;;) {
      await this.refresh();
      const from = this.stamped.generation;
      const stored = await storedRecord(
        target,
        this.keyring,
        this.instance,
        (this.stored.migration ?? 0) + 1,
        now,
      );
      const check = await target.provider.unwrap(stored.wrapped, wrapContext(this.instance));
      if (!Buffer.from(check).equals(Buffer.from(this.keyring.serialize())))
        throw new Error('the new master key did not give back the keyring it wrapped');
      const done = await this.commit(from, stored, this.keyring, []);
      if (done) {
        this.key = target;
        return this.wrapping();
      }
    }
  }

  /**
   * Adds a keyring version and makes it the active one, for every process sharing the store. Returns the
   * new active version.
   */
  async rotate(now: number): Promise<number> {
    const next = await this.change((keyring) => keyring.rotate(now));
    return next.activeVersion;
  }

  /**
   * Rotates when the active version is at least `maxAgeMs` old, as seen after loading the latest keyring:
   * several processes checking at once rotate once. Returns the new active version, or null.
   */
  async rotateIfOlderThan(maxAgeMs: number, now: number): Promise<number | null> {
    const due = (keyring: Keyring): boolean => now - keyring.activeCreatedAt >= maxAgeMs;
    let rotated = false;
    const next = await this.change((keyring) => {
      rotated = due(keyring);
      return rotated ? keyring.rotate(now) : null;
    });
    return rotated ? next.activeVersion : null;
  }

  /** The revocation of token `id` as the keyring this process holds records it, if any. */
  revocationOf(id: string): Revocation | undefined {
    return this.keyring.revocationOf(id);
  }

  /** Records the revocation of token `id` in the keyring (once; SECURITY.md, "Storage"). */
  async recordRevocation(id: string, revocation: Revocation): Promise<void> {
    await this.change((keyring) =>
      keyring.revocationOf(id) ? null : keyring.withRevoked(id, revocation),
    );
  }

  /** Records in the keyring that the store's records are in `format` now (store/upgrade.ts). */
  async setStoreFormat(format: number): Promise<void> {
    await this.change((keyring) =>
      keyring.storeFormat >= format ? null : keyring.withStoreFormat(format),
    );
  }

  /**
   * Whether the stored root token record `bytes` is the one the keyring names: `unnamed` while it names
   * none (a store from before this check, until its next start names the record it has).
   */
  rootRecordIs(bytes: Uint8Array): 'named' | 'other' | 'unnamed' {
    const named = this.keyring.rootRecord;
    if (named === undefined) return 'unnamed';
    const digest = sha256(bytes);
    return named.byteLength === digest.byteLength && timingSafeEqual(named, digest)
      ? 'named'
      : 'other';
  }

  /**
   * Names root token record `bytes` in the keyring, writing it at `key` in the same transaction when
   * `write` is set. With `onlyIfUnnamed` nothing changes when the keyring names a record already (another
   * process set one first). Resolves to whether the keyring now names these bytes.
   */
  async nameRootRecord(
    key: Uint8Array,
    bytes: Uint8Array,
    options: { write: boolean; onlyIfUnnamed: boolean },
  ): Promise<boolean> {
    const digest = sha256(bytes);
    await this.change(
      (keyring) =>
        options.onlyIfUnnamed && keyring.rootRecord !== undefined
          ? null
          : keyring.withRootRecord(digest),
      options.write ? [{ op: 'put', key, value: bytes }] : [],
    );
    return this.rootRecordIs(bytes) === 'named';
  }

  /** Removes keyring versions; the caller has checked that no record names them. */
  async retire(versions: readonly number[]): Promise<void> {
    await this.change((keyring) => keyring.without(versions));
  }

  /** Stores `change(current keyring)` as the next generation, retrying if another process changed it first. */
  private async change(
    change: (keyring: Keyring) => Keyring | null,
    writes: readonly StorageWrite[] = [],
  ): Promise<Keyring> {
    for (;;) {
      await this.refresh();
      const from = this.stamped.generation;
      const next = change(this.keyring);
      if (next === null) return this.keyring;
      const stored = await storedRecord(
        this.key,
        next,
        this.instance,
        this.stored.migration ?? 0,
        this.stored.migrated_at,
      );
      if (await this.commit(from, stored, next, writes)) {
        this.keyring = next;
        return next;
      }
    }
  }

  /** Writes `stored` (holding `keyring`) as generation from + 1 unless another process moved the generation first. */
  private async commit(
    from: number,
    stored: StoredKeyring,
    keyring: Keyring,
    writes: readonly StorageWrite[],
  ): Promise<boolean> {
    const record = pack(stored);
    const generation = packGeneration(keyring, from + 1);
    const done = await this.storage.atomic([GENERATION_KEY], ([gen]) =>
      Math.max(generationIn(gen, this.keyring, new RecordSeal(() => keyring.recordKeys())), 1) !==
      from
        ? { writes: [], result: false }
        : {
            writes: [
              { op: 'put', key: KEYRING_KEY, value: record },
              { op: 'put', key: GENERATION_KEY, value: generation },
              ...writes,
            ],
            result: true,
          },
    );
    if (done) {
      this.stamped = { generation: from + 1, bytes: generation };
      this.stored = stored;
    }
    return done;
  }

  /** The provider to open `stored` with: ours, or the one a migration by another process moved it to. */
  private async follow(stored: StoredKeyring): Promise<WrappingKey> {
    if ((stored.migration ?? 0) === (this.stored.migration ?? 0)) return this.key;
    if (!stored.settings || !this.options.reopen) {
      throw new KeyProviderError(
        'key_provider',
        `the keyring was migrated to ${stored.description ?? `the ${stored.provider} provider`}; restart with that key configured`,
      );
    }
    return { provider: await this.options.reopen(stored.settings), config: stored.settings };
  }
}

async function storedRecord(
  key: WrappingKey,
  keyring: Keyring,
  instance: string,
  migration: number,
  migratedAt: number | undefined,
): Promise<StoredKeyring> {
  return {
    provider: key.provider.name,
    instance,
    wrapped: await key.provider.wrap(keyring.serialize(), wrapContext(instance)),
    description: key.provider.description,
    ...(key.config === undefined ? {} : { settings: key.config }),
    migration,
    ...(migratedAt === undefined ? {} : { migrated_at: migratedAt }),
  };
}

function wrapContext(instance: string): Record<string, string> {
  return { purpose: 'coffer-keyring', instance };
}

/** undefined when the store has no keyring yet (a new store); else the key it records (null: not recorded). */
export async function storedKeyDescription(
  storage: StorageBackend,
): Promise<string | null | undefined> {
  const bytes = await storage.get(KEYRING_KEY);
  if (!bytes) return undefined;
  return (unpack(bytes) as StoredKeyring).description ?? null;
}

/**
 * Loads and opens the stored keyring. `choose` picks the provider for the record (default: `provider`).
 * A record the provider cannot open fails with the provider's reason plus which key the store needs.
 */
async function loadStored(
  storage: StorageBackend,
  provider: KeyProvider,
  choose: (stored: StoredKeyring) => Promise<KeyProvider> = async () => provider,
): Promise<
  { keyring: Keyring; stored: StoredKeyring; generationBytes: Uint8Array | undefined } | undefined
> {
  // Read the generation first: a keyring read after it is at least that new.
  const generationBytes = await storage.get(GENERATION_KEY);
  const bytes = await storage.get(KEYRING_KEY);
  if (!bytes) return undefined;
  const stored = unpack(bytes) as StoredKeyring;
  const opener = await choose(stored);
  // Say which key the store needs when it is not the one tried (after a migration, or another key).
  const needs =
    stored.description === undefined || stored.description === opener.description
      ? ''
      : `; the store needs ${stored.description}${stored.migrated_at === undefined ? '' : ` (migrate-key at ${new Date(stored.migrated_at).toISOString()})`}`;
  if (stored.provider !== opener.name) {
    throw new KeyProviderError(
      'key_provider',
      `the keyring in the data directory is wrapped by the "${stored.provider}" provider, not "${opener.name}"${needs}`,
    );
  }
  try {
    const plain = await opener.unwrap(stored.wrapped, wrapContext(stored.instance));
    return { keyring: Keyring.deserialize(plain), stored, generationBytes };
  } catch (err) {
    if (err instanceof KeyProviderError && needs !== '')
      throw new KeyProviderError(err.setting, `${err.message}${needs}`);
    throw err;
  }
}
