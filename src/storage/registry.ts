import { join } from 'node:path';
import type { StorageBackend } from './backend.js';
import { LmdbBackend } from './lmdb-backend.js';

export interface StorageSettings {
  readonly storage: 'lmdb';
  readonly data_dir: string;
}

/** Storage backends by configuration name. A new backend is one file plus one line here. */
const BACKENDS: Record<StorageSettings['storage'], (settings: StorageSettings) => StorageBackend> =
  {
    lmdb: (settings) => new LmdbBackend({ path: join(settings.data_dir, 'lmdb') }),
  };

export function openStorage(settings: StorageSettings): StorageBackend {
  return BACKENDS[settings.storage](settings);
}
