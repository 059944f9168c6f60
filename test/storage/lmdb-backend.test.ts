import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { StorageBackend } from '../../src/storage/backend.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { tempDir } from '../support/harness.js';
import { storageConformance } from './conformance.js';

const paths = new Map<StorageBackend, string>();
const dirs: string[] = [];

storageConformance('lmdb', {
  async create() {
    const dir = tempDir('coffer-lmdb-');
    dirs.push(dir);
    const backend = new LmdbBackend({ path: join(dir, 'lmdb') });
    paths.set(backend, join(dir, 'lmdb'));
    return backend;
  },
  async reopen(backend) {
    const path = paths.get(backend)!;
    await backend.close();
    const again = new LmdbBackend({ path });
    paths.set(again, path);
    return again;
  },
  async another(backend) {
    const path = paths.get(backend)!;
    const other = new LmdbBackend({ path });
    paths.set(other, path);
    return other;
  },
});

after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
