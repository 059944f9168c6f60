/**
 * The keyring this process uses (KeyringHolder), stored as the keyring record (keyring-record.ts) and the
 * generation record (keyring-generation.ts).
 *
 * Several processes share one store, so every change of the keyring (rotation, revocation, root token,
 * migration) bumps the generation, and stores the keyring with that generation inside it (its `epoch`).
 * A process holds the keyring of one generation; writes read the generation inside their own transaction
 * and refuse to seal under a stale keyring, so once a rotation has committed, no process writes under the
 * old active version again. A running process only ever follows a keyring with the permanent root key it
 * started with: a keyring record replaced by one made elsewhere is refused, not used.
 *
 * Rollback (an older copy of the keyring or its generation put back by someone who can write the storage,
 * which would bring back revoked tokens and retired keys): generations and epochs only grow, so
 *   - a keyring whose epoch is below the generation stored beside it is refused (at start and when followed);
 *   - a running process never accepts a generation or keyring older than one it has held: it fails closed —
 *     every read and write through the record stores answers 500 integrity_error (`guard`) — until the
 *     store holds a keyring at least as new again;
 *   - each host keeps the newest generation it has seen in its data directory (high-water.ts), and a
 *     starting server refuses a store older than that.
 * What none of this can tell from a restore is a whole-store rollback that also takes every server's data
 * directory back: SECURITY.md.
 *
 * A migration (migrate-key) rewraps the same keyring under another master key in one write, so a crash
 * leaves the store openable by exactly one of the two keys. The record names that key: start-up says which
 * key it needs, and running processes, which learn of the migration through the generation, open the new
 * provider from those settings and follow.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { pack } from 'msgpackr';
import { Keyring, type Revocation } from '../crypto/keyring.js';
import { randomBase62 } from '../crypto/random.js';
import { type KeyProvider, KeyProviderError } from '../keys/key-provider.js';
import type { ProviderConfig } from '../keys/registry.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { ROOT_TOKEN_KEY } from '../storage/layout.js';
import { HighWater } from './high-water.js';
import {
  GENERATION_KEY,
  type GenerationStamp,
  generationIn,
  olderGeneration,
  packGeneration,
  StaleKeyringError,
} from './keyring-generation.js';
import {
  KEYRING_KEY,
  loadStored,
  type StoredKeyring,
  storedRecord,
  type WrappingKey,
  wrapContext,
} from './keyring-record.js';
import { printableKey, RecordIntegrityError, RecordSeal } from './record-seal.js';

export { GENERATION_KEY, type GenerationStamp, StaleKeyringError } from './keyring-generation.js';
export { KEYRING_KEY, storedKeyDescription, type WrappingKey } from './keyring-record.js';

export interface HolderOptions {
  /** Opens the provider a migration moved the keyring to, from the settings the store records. */
  readonly reopen?: (config: ProviderConfig) => Promise<KeyProvider>;
  /**
   * For a store being created: the sealed root token record to store with the new keyring, which names it
   * (auth/root-token.ts), so the one keyring write — one call to the master key — covers both.
   */
  readonly newStoreRoot?: (seal: RecordSeal) => Promise<Uint8Array>;
  /** The data directory, where this host keeps the newest generation it has seen (high-water.ts). */
  readonly dataDir?: string;
}

/** What start-up and status show about the key wrapping the keyring. */
export interface WrappingInfo {
  readonly provider: string;
  readonly description: string;
  readonly migrations: number;
  readonly migratedAt: number | null;
}

function sha256(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest();
}

/** The error for a keyring older than a generation it must be at least as new as. */
function olderKeyring(epoch: number, generation: number, than: string): RecordIntegrityError {
  return new RecordIntegrityError(
    'keyring',
    printableKey(KEYRING_KEY),
    `is older than ${than} (epoch ${epoch} < ${generation}): an older copy was put back`,
  );
}

export class KeyringHolder {
  /** The seal of the store's own records; its keys come from the permanent root, which never changes. */
  readonly recordSeal: RecordSeal = new RecordSeal(() => this.keyring.recordKeys());
  /** Set while the store holds an older keyring or generation than this process has: every use fails. */
  private rollback: RecordIntegrityError | null = null;
  private readonly highWater: HighWater | null;

  private constructor(
    private readonly storage: StorageBackend,
    private key: WrappingKey,
    private readonly options: HolderOptions,
    private keyring: Keyring,
    private stamped: GenerationStamp,
    private stored: StoredKeyring,
    readonly instance: string,
  ) {
    this.highWater =
      options.dataDir === undefined
        ? null
        : new HighWater(options.dataDir, instance, 'g', () => this.keyring.recordKeys().mac);
  }

  /**
   * Opens the store's keyring, or creates it for a new store. A generation record that fails its MAC, or
   * is older than the keyring, is replaced by the next generation (every process then reloads the keyring,
   * which the master key authenticates) and returned as `replaced`, for the caller to log and audit. A
   * keyring older than its generation, or than this host has seen, is refused (RecordIntegrityError).
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
      const replaced = await holder.settleOpened(existing.generationBytes);
      // Stores from before the audit log get their audit key once, like any keyring change; keyrings from
      // before epochs get theirs the same way.
      if (!existing.keyring.hasAuditKey || existing.keyring.epoch === undefined)
        await holder.change((keyring) =>
          keyring.hasAuditKey && keyring.epoch !== undefined ? null : keyring.withAuditKey(),
        );
      return { holder, created: false, ...(replaced ? { replaced } : {}) };
    }

    const generated = Keyring.generate(now);
    const root = await options.newStoreRoot?.(new RecordSeal(() => generated.recordKeys()));
    const keyring = (root ? generated.withRootRecord(sha256(root)) : generated).withEpoch(1);
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
    const holder = new KeyringHolder(
      storage,
      wrapping,
      options,
      keyring,
      { generation: 1, bytes: generation },
      stored,
      instance,
    );
    holder.highWater?.record([1, 1]);
    return { holder, created: true };
  }

  /**
   * The checks of a keyring just opened against its generation record and this host's high-water mark;
   * returns the generation record's error when it was replaced.
   */
  private async settleOpened(
    generationBytes: Uint8Array | undefined,
  ): Promise<RecordIntegrityError | undefined> {
    let replaced: RecordIntegrityError | undefined;
    try {
      this.stamped = this.stampOf(generationBytes);
      const epoch = this.keyring.epoch;
      if (epoch !== undefined && this.stamped.generation < epoch)
        throw olderGeneration(this.stamped.generation, epoch);
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      replaced = err;
      await this.replaceGeneration(generationBytes);
    }
    const epoch = this.keyring.epoch;
    if (epoch !== undefined && epoch < this.stamped.generation)
      throw olderKeyring(epoch, this.stamped.generation, 'the generation stored beside it');
    const [seenGeneration, seenEpoch] = this.highWater?.seen() ?? [0, 0];
    if (this.stamped.generation < seenGeneration!)
      throw olderGeneration(this.stamped.generation, seenGeneration!);
    if (epoch !== undefined && epoch < (seenEpoch ?? 0))
      throw olderKeyring(epoch, seenEpoch!, 'one this host has seen');
    this.noteSeen();
    return replaced;
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
   * Throws while the store holds an older keyring or generation than this process has held (a rollback):
   * the record stores call it before every use, so nothing is served from a store put back.
   */
  guard(): void {
    if (this.rollback) throw this.rollback;
  }

  /**
   * For write transactions: throws StaleKeyringError unless `bytes` (read under GENERATION_KEY in the
   * transaction) is still the generation of `stamp`, RecordIntegrityError if they fail their MAC or are
   * older than `stamp` (a rollback, which then fails every use). The same bytes as the stamp's need no
   * MAC: they are the ones this process checked or wrote.
   */
  checkCurrent(stamp: GenerationStamp, bytes: Uint8Array | undefined): void {
    if (bytes !== undefined && Buffer.compare(stamp.bytes, bytes) === 0) return;
    const generation = generationIn(bytes, this.keyring, this.recordSeal);
    if (generation < stamp.generation) {
      this.rollback = olderGeneration(generation, stamp.generation);
      throw this.rollback;
    }
    if (generation !== stamp.generation) throw new StaleKeyringError();
  }

  /** Loads the stored keyring again if its generation moved on; refuses (and fails closed on) one that moved back. */
  async refresh(): Promise<void> {
    const bytes = await this.storage.get(GENERATION_KEY);
    if (bytes !== undefined && Buffer.compare(bytes, this.stamped.bytes) === 0) {
      this.rollback = null;
      return;
    }
    const now = this.stampOf(bytes);
    if (now.generation < this.stamped.generation) {
      this.rollback = olderGeneration(now.generation, this.stamped.generation);
      throw this.rollback;
    }
    if (now.generation === this.stamped.generation) {
      this.stamped = now; // the same generation in other bytes: format 1's plain number, MACed by the upgrade
      this.rollback = null;
      return;
    }
    let followed: WrappingKey = this.key;
    const loaded = await loadStored(this.storage, this.key.provider, async (stored) => {
      followed = await this.follow(stored);
      return followed.provider;
    });
    if (!loaded) return;
    // Checked before anything is taken over: a refused keyring leaves this process as it was.
    if (!loaded.keyring.sharesRootWith(this.keyring)) {
      throw new RecordIntegrityError(
        'keyring',
        printableKey(KEYRING_KEY),
        'holds a keyring with another permanent root key than the one this process opened, and is not used',
      );
    }
    const stamp = this.stampOf(loaded.generationBytes);
    const [epoch, held] = [loaded.keyring.epoch, this.keyring.epoch];
    if (epoch !== undefined && held !== undefined && epoch < held) {
      this.rollback = olderKeyring(epoch, held, 'the keyring this process holds');
      throw this.rollback;
    }
    if (epoch !== undefined && epoch < stamp.generation) {
      this.rollback = olderKeyring(epoch, stamp.generation, 'the generation stored beside it');
      throw this.rollback;
    }
    this.keyring = loaded.keyring;
    this.stamped = stamp;
    this.stored = loaded.stored;
    this.key = followed;
    this.rollback = null;
    this.noteSeen();
  }

  /**
   * Replaces the generation record `damaged` (or its absence, or an older copy), unless it changed
   * meanwhile, by the next generation after the keyring's own, storing the keyring at that epoch in the
   * same transaction (the keyring is authenticated by the master key: its epoch is the truth).
   */
  private async replaceGeneration(damaged: Uint8Array | undefined): Promise<void> {
    const next = Math.max(this.keyring.epoch ?? 0, this.highWater?.seen()?.[0] ?? 0) + 1;
    const keyring = this.keyring.withEpoch(next);
    const stored = await storedRecord(
      this.key,
      keyring,
      this.instance,
      this.stored.migration ?? 0,
      this.stored.migrated_at,
    );
    const bytes = packGeneration(keyring, next);
    const unchanged = (now: Uint8Array | undefined): boolean =>
      now === undefined || damaged === undefined
        ? now === damaged
        : Buffer.compare(now, damaged) === 0;
    const done = await this.storage.atomic([GENERATION_KEY], ([now]) => ({
      writes: unchanged(now)
        ? [
            { op: 'put' as const, key: KEYRING_KEY, value: pack(stored) },
            { op: 'put' as const, key: GENERATION_KEY, value: bytes },
          ]
        : [],
      result: unchanged(now),
    }));
    if (done) {
      this.keyring = keyring;
      this.stored = stored;
      this.stamped = { generation: next, bytes };
      return;
    }
    // Another process replaced it first: take what it stored.
    await this.refresh();
  }

  /** The stamp of the stored generation record `bytes`, read with the current keyring. */
  private stampOf(bytes: Uint8Array | undefined): GenerationStamp {
    return {
      generation: Math.max(generationIn(bytes, this.keyring, this.recordSeal), 1),
      bytes: bytes ?? new Uint8Array(0),
    };
  }

  /** Records the generation and epoch held now as seen by this host. */
  private noteSeen(): void {
    this.highWater?.record([this.stamped.generation, this.keyring.epoch ?? 0]);
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
      const keyring = this.keyring.withEpoch(from + 1);
      const stored = await storedRecord(
        target,
        keyring,
        this.instance,
        (this.stored.migration ?? 0) + 1,
        now,
      );
      const check = await target.provider.unwrap(stored.wrapped, wrapContext(this.instance));
      if (!Buffer.from(check).equals(Buffer.from(keyring.serialize())))
        throw new Error('the new master key did not give back the keyring it wrapped');
      if (await this.commit(from, stored, keyring, [])) {
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

  /**
   * Stores `change(current keyring)` as the next generation (with that generation as its epoch),
   * retrying if another process changed it first.
   */
  private async change(
    change: (keyring: Keyring) => Keyring | null,
    writes: readonly StorageWrite[] = [],
  ): Promise<Keyring> {
    for (;;) {
      await this.refresh();
      const from = this.stamped.generation;
      const next = change(this.keyring)?.withEpoch(from + 1);
      if (next === undefined) return this.keyring;
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
      this.highWater?.record([from + 1, from + 1]);
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
