/**
 * Opening an existing store for the offline commands (coffer audit …, coffer operator snapshot …): with the
 * configured master key, or without it for what needs none. Never creates a store, a keyring or a key for
 * a wrong path.
 */
import type { CofferConfig } from '../config/schema.js';
import { sodiumReady } from '../crypto/aead.js';
import { openKeyProvider, providerConfig } from '../keys/registry.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import { type Records, Store } from '../store/store.js';
import { CliError, EXIT } from './exit-codes.js';

/** The existing store, open; refused in one line when there is none. */
async function openExisting(config: CofferConfig): Promise<Store> {
  if (!Store.mayExist(config))
    throw new CliError(`no Coffer store at ${config.data_dir} (COFFER_DATA_DIR)`, EXIT.usage);
  const store = await Store.open(config);
  if (!(await store.hasKeyring())) {
    await store.close();
    throw new CliError(
      `the store at ${config.data_dir} has no keyring: it is not a Coffer store that has been started`,
      EXIT.usage,
    );
  }
  return store;
}

/** Runs `work` on the existing store opened with its master key and keyring. */
export async function withKeyring<T>(
  config: CofferConfig,
  work: (store: Store, records: Records, holder: KeyringHolder) => Promise<T>,
): Promise<T> {
  const store = await openExisting(config);
  try {
    await sodiumReady();
    const { provider } = await openKeyProvider(config);
    const { holder } = await store.openKeyring(
      { provider, config: providerConfig(config) },
      Date.now(),
      { dataDir: config.data_dir },
    );
    return await work(store, store.records(holder), holder);
  } finally {
    await store.close();
  }
}

/** Runs `work` on the existing store without its key (for what needs none: the structure-only seal report). */
export async function withStore<T>(
  config: CofferConfig,
  work: (store: Store) => Promise<T>,
): Promise<T> {
  const store = await openExisting(config);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}
