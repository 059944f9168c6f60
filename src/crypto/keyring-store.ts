/**
 * The keyring in storage. The stored record names the provider that wrapped it and a random instance id;
 * the id goes into the wrap context, so a wrapped keyring only opens as the keyring of this store.
 *
 * Several processes share one store, so every change of the keyring (rotation) bumps a generation number
 * kept under its own small key. A process holds the keyring of one generation (KeyringHolder); writes
 * read the generation inside their own transaction and refuse to seal under a stale keyring, so once a
 * rotation has committed, no process writes under the old active version again.
 */
import { pack, unpack } from 'msgpackr';
import type { StorageBackend } from '../storage/backend.js';
import { systemKey } from '../storage/layout.js';
import { packUint32, unpackUint32 } from '../storage/uint32.js';
import { KeyProviderError, type KeyProvider } from '../keys/key-provider.js';
import { Keyring } from './keyring.js';
import { randomBase62 } from './random.js';

interface StoredKeyring {
  readonly provider: string;
  readonly instance: string;
  readonly wrapped: Uint8Array;
}

export const KEYRING_KEY = systemKey('keyring');
export const GENERATION_KEY = systemKey('keyring-generation');

/** The keyring generation as stored under GENERATION_KEY (0 when absent). */
export const unpackGeneration = unpackUint32;
const packGeneration = packUint32;

/** Thrown inside a write transaction that found a newer keyring generation than the one it sealed with. */
export class StaleKeyringError extends Error {
  constructor() {
    super('the keyring changed since this process loaded it');
    this.name = 'StaleKeyringError';
  }
}

/** The keyring this process uses, and the generation it belongs to. */
export class KeyringHolder {
  private constructor(
    private readonly storage: StorageBackend,
    private readonly provider: KeyProvider,
    private keyring: Keyring,
    private gen: number,
    readonly instance: string,
  ) {}

  static async open(storage: StorageBackend, provider: KeyProvider, now: number): Promise<{ holder: KeyringHolder; created: boolean }> {
    const existing = await loadStored(storage, provider);
    if (existing) return { holder: new KeyringHolder(storage, provider, existing.keyring, existing.generation, existing.instance), created: false };

    const keyring = Keyring.generate(now);
    const instance = randomBase62(16);
    const record = pack({ provider: provider.name, instance, wrapped: await provider.wrap(keyring.serialize(), wrapContext(instance)) } satisfies StoredKeyring);
    // Another process may have created the keyring meanwhile: then that one wins and is used.
    const created = await storage.atomic([KEYRING_KEY], ([current]) =>
      current
        ? { writes: [], result: false }
        : { writes: [{ op: 'put', key: KEYRING_KEY, value: record }, { op: 'put', key: GENERATION_KEY, value: packGeneration(1) }], result: true },
    );
    if (!created) return KeyringHolder.open(storage, provider, now);
    return { holder: new KeyringHolder(storage, provider, keyring, 1, instance), created: true };
  }

  current(): Keyring {
    return this.keyring;
  }

  get generation(): number {
    return this.gen;
  }

  /** Loads the stored keyring again if its generation moved on. */
  async refresh(): Promise<void> {
    const generation = unpackGeneration(await this.storage.get(GENERATION_KEY));
    if (generation === this.gen) return;
    const stored = await loadStored(this.storage, this.provider);
    if (stored) {
      this.keyring = stored.keyring;
      this.gen = stored.generation;
    }
  }

  get providerName(): string {
    return this.provider.name;
  }

  /**
   * Adds a keyring version and makes it the active one, for every process sharing the store. Returns the
   * new active version.
   */
  async rotate(now: number): Promise<number> {
    const next = await this.change((keyring) => keyring.rotate(now));
    return next.activeVersion;
  }

  /** Removes keyring versions; the caller has checked that no record names them. */
  async retire(versions: readonly number[]): Promise<void> {
    await this.change((keyring) => keyring.without(versions));
  }

  /** Stores `change(current keyring)` as the next generation, retrying if another process changed it first. */
  private async change(change: (keyring: Keyring) => Keyring): Promise<Keyring> {
    for (;;) {
      await this.refresh();
      const from = this.gen;
      const next = change(this.keyring);
      const record = pack({ provider: this.provider.name, instance: this.instance, wrapped: await this.provider.wrap(next.serialize(), wrapContext(this.instance)) } satisfies StoredKeyring);
      const done = await this.storage.atomic([GENERATION_KEY], ([gen]) =>
        unpackGeneration(gen) !== from
          ? { writes: [], result: false }
          : { writes: [{ op: 'put', key: KEYRING_KEY, value: record }, { op: 'put', key: GENERATION_KEY, value: packGeneration(from + 1) }], result: true },
      );
      if (done) {
        this.keyring = next;
        this.gen = from + 1;
        return next;
      }
    }
  }
}

function wrapContext(instance: string): Record<string, string> {
  return { purpose: 'coffer-keyring', instance };
}

async function loadStored(storage: StorageBackend, provider: KeyProvider): Promise<{ keyring: Keyring; instance: string; generation: number } | undefined> {
  // Read the generation first: a keyring read after it is at least that new.
  const generation = unpackGeneration(await storage.get(GENERATION_KEY));
  const bytes = await storage.get(KEYRING_KEY);
  if (!bytes) return undefined;
  const stored = unpack(bytes) as StoredKeyring;
  if (stored.provider !== provider.name) {
    throw new KeyProviderError('key_provider', `the keyring in the data directory is wrapped by the "${stored.provider}" provider, not "${provider.name}"`);
  }
  const plain = await provider.unwrap(stored.wrapped, wrapContext(stored.instance));
  return { keyring: Keyring.deserialize(plain), instance: stored.instance, generation: Math.max(generation, 1) };
}
