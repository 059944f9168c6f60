/**
 * `npm run bench:rewrap`: how fast a rewrap moves records onto a new keyring version, and what it costs
 * the readers meanwhile. Seeds secret keys through the storage layer (sealed like real writes), starts
 * Coffer with all workers, measures random reads, rotates, starts a rewrap and measures the same reads
 * while it runs.
 *
 *   npm run bench:rewrap -- [--keys 200000] [--seconds 5] [--batch-size 500]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { prepareStore } from '../src/app.js';
import { generateToken } from '../src/auth/token-format.js';
import { loadConfig } from '../src/config/load.js';
import { sodiumReady } from '../src/crypto/aead.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../src/keys/local-provider.js';
import type { StorageWrite } from '../src/storage/backend.js';
import { LmdbBackend } from '../src/storage/lmdb-backend.js';
import { KeyringHolder } from '../src/store/keyring-store.js';
import { sealedVersionWrites } from '../src/store/kv-version-writes.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { describeMachine } from './machine.js';
import { startCoffer } from './servers.js';
import { ensureTools, runWrk } from './wrk.js';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '200000' },
    seconds: { type: 'string', default: '5' },
    'batch-size': { type: 'string', default: '500' },
  },
});
const keys = Number(args.keys);
const seconds = Number(args.seconds);
const NAMESPACES = 100;
const perNamespace = Math.ceil(keys / NAMESPACES);

async function seed(dir: string, root: string): Promise<void> {
  const config = loadConfig({
    COFFER_DATA_DIR: join(dir, 'data'),
    COFFER_MASTER_KEY_FILE: join(dir, 'master.key'),
    COFFER_ROOT_TOKEN: root,
    COFFER_LOG_LEVEL: 'warn',
  });
  await prepareStore(config, { log: pino({ level: 'warn' }) });
  await sodiumReady();
  const storage = new LmdbBackend({ path: join(config.data_dir, 'lmdb') });
  try {
    const { holder } = await KeyringHolder.open(
      storage,
      new LocalKeyProvider(loadOrCreateMasterKey(config.master_key_file).key),
      Date.now(),
    );
    let writes: StorageWrite[] = [];
    for (let i = 0; i < NAMESPACES * perNamespace; i++) {
      writes.push(
        ...sealedVersionWrites(holder.current(), holder.recordSeal, {
          namespace: `rw/ns${i % NAMESPACES}`,
          key: `k${Math.floor(i / NAMESPACES)}`,
          version: 1,
          type: 'secret',
          value: 'p'.repeat(64),
          createdAt: Date.now(),
          previous: undefined,
        }),
      );
      if (writes.length >= 15_000) {
        const batch = writes;
        writes = [];
        await storage.atomic([], () => ({ writes: batch, result: undefined }));
      }
    }
    const rest = writes;
    await storage.atomic([], () => ({ writes: rest, result: undefined }));
  } finally {
    await storage.close();
  }
}

async function main(): Promise<void> {
  ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
  const dir = mkdtempSync(join(tmpdir(), 'coffer-rewrap-'));
  const root = generateToken().value;
  console.log(`seeding ${(NAMESPACES * perNamespace).toLocaleString('en')} secrets…`);
  await seed(dir, root);
  const server = await startCoffer({
    dataDir: dir,
    rootToken: root,
    workers: availableParallelism(),
    core: null,
  });
  try {
    const reader = String(
      (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const lua = shape.randomKeys('/v1/kv/rw/', NAMESPACES, perNamespace, reader);
    await runWrk({ url: server.url, lua, connections: 32, seconds: 1 });
    const before = await runWrk({ url: server.url, lua, connections: 32, seconds });

    await api(server.url, root, 'POST', '/v1/sys/keyring/rotate');
    const started = performance.now();
    await api(server.url, root, 'POST', '/v1/sys/keyring/rewrap', {
      batch_size: Number(args['batch-size']),
    });
    const during = await runWrk({ url: server.url, lua, connections: 32, seconds });
    let state = await api(server.url, root, 'GET', '/v1/sys/keyring/rewrap');
    const examinedDuringReads = Number(state.examined);
    while (state.finished_at === null || state.running) {
      await new Promise((r) => setTimeout(r, 100));
      state = await api(server.url, root, 'GET', '/v1/sys/keyring/rewrap');
    }
    const elapsed = (performance.now() - started) / 1000;
    const alone =
      (Date.parse(String(state.finished_at)) - Date.parse(String(state.started_at))) / 1000;

    console.log(
      `\nrewrap — ${new Date().toISOString()} — ${describeMachine()}; ${availableParallelism()} workers, batch ${args['batch-size']}`,
    );
    console.log(
      `  records rewrapped                ${Number(state.rewrapped).toLocaleString('en')} of ${Number(state.examined).toLocaleString('en')} examined (${state.failed} failed)`,
    );
    console.log(
      `  rewrap rate, whole run           ${(Number(state.examined) / alone).toFixed(0)} records/s (${alone.toFixed(1)} s; ${elapsed.toFixed(1)} s wall including polling)`,
    );
    console.log(
      `  examined while wrk read          ${examinedDuringReads.toLocaleString('en')} records in the ${seconds} s read run`,
    );
    console.log(
      `  random reads before              ${before.requestsPerSecond.toFixed(0)} req/s, p99 ${before.p99Ms.toFixed(2)} ms`,
    );
    console.log(
      `  random reads during the rewrap   ${during.requestsPerSecond.toFixed(0)} req/s, p99 ${during.p99Ms.toFixed(2)} ms, ${during.failedStatus + during.errors} failed`,
    );
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
