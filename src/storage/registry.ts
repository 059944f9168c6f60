import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { StorageBackend } from './backend.js';
import { GENERATION_KEY } from './layout.js';
import { LmdbBackend } from './lmdb-backend.js';
import { PostgresBackend } from './postgres-backend.js';

export const STORAGE_NAMES = ['lmdb', 'postgres'] as const;
export type StorageName = (typeof STORAGE_NAMES)[number];

export interface StorageSettings {
  readonly storage: StorageName;
  readonly data_dir: string;
  readonly postgres: {
    readonly schema: string;
    readonly pool_size: number;
    readonly statement_timeout_ms: number;
  };
  /** postgres://… from COFFER_PG_URL; without it, the PG* environment variables (and ~/.pgpass) apply. */
  readonly pg_url?: string;
}

/** Storage backends by configuration name. A new backend is one file plus one line here. */
const BACKENDS: Record<StorageName, (settings: StorageSettings) => Promise<StorageBackend>> = {
  lmdb: async (settings) => new LmdbBackend({ path: join(settings.data_dir, 'lmdb') }),
  postgres: (settings) =>
    PostgresBackend.open({
      ...(settings.pg_url === undefined ? {} : { connectionString: settings.pg_url }),
      schema: settings.postgres.schema,
      poolSize: settings.postgres.pool_size,
      statementTimeoutMs: settings.postgres.statement_timeout_ms,
      // Every keyring change (rotation, revocation, a new root token, migration) writes the generation.
      announce: [GENERATION_KEY],
    }),
};

/**
 * Whether a store could be there without opening it (which may create it): LMDB's directory exists. A
 * database is not looked for here: opening it tells (a store there has a keyring).
 */
const MAY_EXIST: Record<StorageName, (settings: StorageSettings) => boolean> = {
  lmdb: (settings) => existsSync(join(settings.data_dir, 'lmdb')),
  postgres: () => true,
};

export function storeMayExist(settings: StorageSettings): boolean {
  return MAY_EXIST[settings.storage](settings);
}

export function openStorage(settings: StorageSettings): Promise<StorageBackend> {
  return BACKENDS[settings.storage](settings);
}
