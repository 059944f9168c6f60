/**
 * The one conformance suite (conformance.ts) against every registered storage backend: a new backend is
 * one file and one line in src/storage/registry.ts, plus its fresh test settings below (the type makes
 * that line required), and it runs the suite with no other change.
 */
import type { StorageBackend } from '../../src/storage/backend.js';
import { NOTHING_ANNOUNCED } from '../../src/storage/plugin.js';
import {
  STORAGE_BACKENDS,
  type StorageName,
  type StorageSettings,
} from '../../src/storage/registry.js';
import { tempDir } from '../support/harness.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { storageConformance } from './conformance.js';

/** Settings naming a new, empty store of each backend, and what the backend needs to be there. */
const FRESH: Record<
  StorageName,
  {
    readonly settings: () => StorageSettings;
    readonly needs?: (ctx: Mocha.Context) => Promise<void>;
    /** Its optional capabilities (storage/backend.ts). */
    readonly followingReads: boolean;
  }
> = {
  lmdb: {
    settings: () => ({ storage: 'lmdb', data_dir: tempDir('coffer-lmdb-') }),
    followingReads: true,
  },
  postgres: {
    followingReads: false,
    settings: () =>
      ({
        storage: 'postgres',
        data_dir: tempDir(),
        pg_url: PG_TEST_URL,
        postgres: { schema: testSchema(), pool_size: 8, statement_timeout_ms: 10_000 },
      }) as StorageSettings,
    needs: requirePostgres,
  },
};

for (const backend of STORAGE_BACKENDS) {
  describe(`the ${backend.name} backend (registered in src/storage/registry.ts)`, function () {
    this.timeout(60_000);
    const fresh = FRESH[backend.name];
    before(async function () {
      await fresh.needs?.(this);
    });
    after(async () => {
      await dropTestSchemas();
    });

    const settingsOf = new Map<StorageBackend, StorageSettings>();
    const open = async (settings: StorageSettings): Promise<StorageBackend> => {
      const storage = await backend.open(settings, NOTHING_ANNOUNCED);
      settingsOf.set(storage, settings);
      return storage;
    };
    storageConformance(backend.name, {
      create: () => open(fresh.settings()),
      async reopen(storage) {
        await storage.close();
        return open(settingsOf.get(storage)!);
      },
      another: (storage) => open(settingsOf.get(storage)!),
      followingReads: fresh.followingReads,
    });
  });
}
