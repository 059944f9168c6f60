/**
 * Loads the keyring from storage at start-up, or creates it on first start. The stored record names
 * the provider that wrapped it and a random instance id; the id goes into the wrap context, so a wrapped
 * keyring only opens as the keyring of this store.
 */
import { pack, unpack } from 'msgpackr';
import type { StorageBackend } from '../storage/backend.js';
import { systemKey } from '../storage/layout.js';
import { KeyProviderError, type KeyProvider } from '../keys/key-provider.js';
import { Keyring } from './keyring.js';
import { randomBase62 } from './random.js';

interface StoredKeyring {
  readonly provider: string;
  readonly instance: string;
  readonly wrapped: Uint8Array;
}

const KEY = systemKey('keyring');

export interface OpenedKeyring {
  readonly keyring: Keyring;
  readonly instance: string;
  readonly created: boolean;
}

export async function openKeyring(storage: StorageBackend, provider: KeyProvider, now: number): Promise<OpenedKeyring> {
  const existing = await storage.get(KEY);
  if (existing) return { ...(await unwrapStored(existing, provider)), created: false };

  const keyring = Keyring.generate(now);
  const instance = randomBase62(16);
  const wrapped = await provider.wrap(keyring.serialize(), wrapContext(instance));
  const record = pack({ provider: provider.name, instance, wrapped } satisfies StoredKeyring);
  // Another process may have created the keyring meanwhile: then that one wins and is used.
  const winner = await storage.atomic([KEY], ([current]) =>
    current ? { writes: [], result: current } : { writes: [{ op: 'put', key: KEY, value: record }], result: undefined },
  );
  if (winner) return { ...(await unwrapStored(winner, provider)), created: false };
  return { keyring, instance, created: true };
}

function wrapContext(instance: string): Record<string, string> {
  return { purpose: 'coffer-keyring', instance };
}

async function unwrapStored(bytes: Uint8Array, provider: KeyProvider): Promise<{ keyring: Keyring; instance: string }> {
  const stored = unpack(bytes) as StoredKeyring;
  if (stored.provider !== provider.name) {
    throw new KeyProviderError('key_provider', `the keyring in the data directory is wrapped by the "${stored.provider}" provider, not "${provider.name}"`);
  }
  const plain = await provider.unwrap(stored.wrapped, wrapContext(stored.instance));
  return { keyring: Keyring.deserialize(plain), instance: stored.instance };
}
