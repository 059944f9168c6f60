/**
 * The state a process holds of the store's keyring (keyring-store.ts says why and how it is kept): the
 * keyring, its generation, the key wrapping it; following other processes' changes, refusing to go back,
 * and committing a change as the next generation. KeyringHolder (keyring-store.ts) adds the changes
 * themselves and the opening of a store.
 */
import { createHash } from 'node:crypto';
import { pack } from 'msgpackr';
import type { Keyring } from '../crypto/keyring.js';
import type { HighWaterAnchor } from '../keys/key-provider.js';
import { type KeyProvider, KeyProviderError } from '../keys/key-provider.js';
import type { ProviderConfig } from '../keys/registry.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import { type EventDraft, type LoggedPlan, withEvents } from './event-log.js';
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
} from './keyring-record.js';
import { printableKey, RecordIntegrityError, RecordSeal } from './record-seal.js';

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

export function sha256(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest();
}

/** The error for a keyring older than a generation it must be at least as new as. */
export function olderKeyring(
  epoch: number,
  generation: number,
  than: string,
): RecordIntegrityError {
  return new RecordIntegrityError(
    'keyring',
    printableKey(KEYRING_KEY),
    `is older than ${than} (epoch ${epoch} < ${generation}): an older copy was put back`,
  );
}

export abstract class KeyringState {
  /** The seal of the store's own records; its keys come from the permanent root, which never changes. */
  readonly recordSeal: RecordSeal = new RecordSeal(() => this.keyring.recordKeys());
  /** Set while the store holds an older keyring or generation than this process has: every use fails. */
  protected rollback: RecordIntegrityError | null = null;
  protected readonly highWater: HighWater | null;

  protected constructor(
    protected readonly storage: StorageBackend,
    protected key: WrappingKey,
    protected readonly options: HolderOptions,
    protected keyring: Keyring,
    protected stamped: GenerationStamp,
    protected stored: StoredKeyring,
    readonly instance: string,
  ) {
    this.highWater =
      options.dataDir === undefined
        ? null
        : new HighWater(
            options.dataDir,
            instance,
            'g',
            () => this.keyring.recordKeys().mac,
            key.provider.anchor,
          );
  }

  /** Where the key provider keeps high-water marks out of the data directory, if it can. */
  get anchor(): HighWaterAnchor | undefined {
    return this.key.provider.anchor;
  }

  /**
   * The checks of a keyring just opened against its generation record and this host's high-water mark;
   * returns the generation record's error when it was replaced.
   */
  protected async settleOpened(
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
  protected async replaceGeneration(damaged: Uint8Array | undefined): Promise<void> {
    const next = Math.max(this.keyring.epoch ?? 0, this.highWater?.seen()?.[0] ?? 0) + 1;
    const keyring = this.keyring.withEpoch(next);
    const stored = await this.storedAsNow(keyring);
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

  /** `keyring` as a record wrapped by the key this process holds, its migration count unchanged. */
  private storedAsNow(keyring: Keyring): Promise<StoredKeyring> {
    return storedRecord(
      this.key,
      keyring,
      this.instance,
      this.stored.migration ?? 0,
      this.stored.migrated_at,
    );
  }

  /** The stamp of the stored generation record `bytes`, read with the current keyring. */
  protected stampOf(bytes: Uint8Array | undefined): GenerationStamp {
    return {
      generation: Math.max(generationIn(bytes, this.keyring, this.recordSeal), 1),
      bytes: bytes ?? new Uint8Array(0),
    };
  }

  /** Records the generation and epoch held now as seen by this host. */
  protected noteSeen(): void {
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
   * Stores `change(current keyring)` as the next generation (with that generation as its epoch),
   * retrying if another process changed it first.
   */
  protected async change(
    change: (keyring: Keyring) => Keyring | null,
    writes: readonly StorageWrite[] = [],
    events?: (next: Keyring) => readonly EventDraft[],
  ): Promise<Keyring> {
    for (;;) {
      await this.refresh();
      const from = this.stamped.generation;
      const next = change(this.keyring)?.withEpoch(from + 1);
      if (next === undefined) return this.keyring;
      const stored = await this.storedAsNow(next);
      if (await this.commit(from, stored, next, writes, events?.(next))) {
        this.keyring = next;
        return next;
      }
    }
  }

  /** Writes `stored` (holding `keyring`) as generation from + 1 unless another process moved the generation first. */
  protected async commit(
    from: number,
    stored: StoredKeyring,
    keyring: Keyring,
    writes: readonly StorageWrite[],
    events: readonly EventDraft[] = [],
  ): Promise<boolean> {
    const record = pack(stored);
    const generation = packGeneration(keyring, from + 1);
    const seal = new RecordSeal(() => keyring.recordKeys());
    const decide = ([gen]: readonly (Uint8Array | undefined)[]): LoggedPlan<boolean> =>
      Math.max(generationIn(gen, this.keyring, seal), 1) !== from
        ? { writes: [], result: false }
        : {
            writes: [
              { op: 'put', key: KEYRING_KEY, value: record },
              { op: 'put', key: GENERATION_KEY, value: generation },
              ...writes,
            ],
            result: true,
            events,
          };
    // An event (a rotation) is written in the same transaction, at the event log's next position.
    const [keys, plan] =
      events.length > 0
        ? withEvents({ seal, storage: this.storage }, [GENERATION_KEY], decide)
        : [[GENERATION_KEY], decide];
    const done = await this.storage.atomic(keys, plan);
    if (done) {
      this.stamped = { generation: from + 1, bytes: generation };
      this.stored = stored;
      this.highWater?.record([from + 1, from + 1]);
    }
    return done;
  }

  /** The provider to open `stored` with: ours, or the one a migration by another process moved it to. */
  protected async follow(stored: StoredKeyring): Promise<WrappingKey> {
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
