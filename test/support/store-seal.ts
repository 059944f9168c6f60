/** The store of a stopped server, opened as its offline tools do: storage, keyring (local master key), record seal. */
import { sodiumReady } from '../../src/crypto/aead.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import type { RecordSeal } from '../../src/store/record-seal.js';

export async function withStoreSeal<T>(
  lmdbDir: string,
  keyFile: string,
  work: (storage: LmdbBackend, seal: RecordSeal, holder: KeyringHolder) => Promise<T>,
): Promise<T> {
  await sodiumReady();
  const storage = new LmdbBackend({ path: lmdbDir });
  try {
    const { holder } = await KeyringHolder.open(
      storage,
      new LocalKeyProvider(loadOrCreateMasterKey(keyFile).key),
      Date.now(),
    );
    return await work(storage, holder.recordSeal, holder);
  } finally {
    await storage.close();
  }
}
