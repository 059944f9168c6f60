/**
 * The keyring's stored record (`Skeyring`): the keyring wrapped by the master key provider, with a random
 * instance id that goes into the wrap context (so a wrapped keyring only opens as the keyring of this
 * store), the provider that wrapped it and, in words and settings, which key that is (start-up says which
 * key a store needs; running processes follow a migration from the settings).
 */
import { unpack } from 'msgpackr';
import { Keyring } from '../crypto/keyring.js';
import { type KeyProvider, KeyProviderError } from '../keys/key-provider.js';
import type { ProviderConfig } from '../keys/registry.js';
import type { StorageBackend } from '../storage/backend.js';
import { GENERATION_KEY, systemKey } from './layout.js';
import { printableKey, RecordIntegrityError } from './record-seal.js';

export const KEYRING_KEY = systemKey('keyring');

export interface StoredKeyring {
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

export async function storedRecord(
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

/**
 * The stored form in `bytes`. Its outer fields are not authenticated (the wrapped keyring is, by the
 * provider): anything that does not unpack to one is a RecordIntegrityError, never an exception of msgpack's.
 */
function storedForm(bytes: Uint8Array): StoredKeyring {
  let stored: unknown;
  try {
    stored = unpack(bytes);
  } catch {
    stored = null;
  }
  const s = stored as Partial<StoredKeyring> | null;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.provider !== 'string' ||
    typeof s.instance !== 'string' ||
    !(s.wrapped instanceof Uint8Array)
  )
    throw new RecordIntegrityError('keyring', printableKey(KEYRING_KEY), 'is not a keyring record');
  return s as StoredKeyring;
}

export function wrapContext(instance: string): Record<string, string> {
  return { purpose: 'coffer-keyring', instance };
}

/** undefined when the store has no keyring yet (a new store); else the key it records (null: not recorded). */
export async function storedKeyDescription(
  storage: StorageBackend,
): Promise<string | null | undefined> {
  const bytes = await storage.get(KEYRING_KEY);
  if (!bytes) return undefined;
  return storedForm(bytes).description ?? null;
}

/**
 * Loads and opens the stored keyring. `choose` picks the provider for the record (default: `provider`).
 * A record the provider cannot open fails with the provider's reason plus which key the store needs.
 */
export async function loadStored(
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
  const stored = storedForm(bytes);
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

/** The keyring in a stored keyring record `bytes` (a snapshot's), opened with `provider`. */
export async function openKeyringRecord(
  bytes: Uint8Array,
  provider: KeyProvider,
): Promise<Keyring> {
  const stored = storedForm(bytes);
  if (stored.provider !== provider.name)
    throw new KeyProviderError(
      'key_provider',
      `the keyring is wrapped by the "${stored.provider}" provider, not "${provider.name}"${stored.description === undefined ? '' : `; it needs ${stored.description}`}`,
    );
  return Keyring.deserialize(await provider.unwrap(stored.wrapped, wrapContext(stored.instance)));
}
