/**
 * `npm run bench:large`: does Coffer stay fast as the store grows? Seeds 1,000,000 secret keys in 10,000
 * namespaces straight through the storage layer (in large transactions, each value sealed exactly as a
 * real write seals it), then measures a fresh start-up, random-key reads over the whole store, and the
 * workers' resident memory; and the same random reads on a 1,000-key store for comparison.
 *
 *   npm run bench:large -- [--keys 1000000] [--namespaces 10000] [--seconds 10]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { RecordSeal } from '../src/store/record-seal.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { describeMachine } from './machine.js';
import { resultsDir } from './report.js';
import { type RunningServer, residentMb, startCoffer } from './servers.js';
import { ensureTools, type LoadResult, runWrk } from './wrk.js';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    namespaces: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
  },
});
const VALUE = 'p'.repeat(64);

/** Seeds `namespaces` × `perNamespace` secret keys large/ns<i>/k<j>; returns the seconds it took. */
async function seed(
  dir: string,
  root: string,
  namespaces: number,
  perNamespace: number,
): Promise<number> {
  const env = {
    COFFER_DATA_DIR: join(dir, 'data'),
    COFFER_MASTER_KEY_FILE: join(dir, 'master.key'),
    COFFER_ROOT_TOKEN: root,
    COFFER_LOG_LEVEL: 'warn',
  };
  const config = loadConfig(env);
  await prepareStore(config, { log: pino({ level: 'warn' }) });
  await sodiumReady();
  const storage = new LmdbBackend({ path: join(config.data_dir, 'lmdb') });
  const started = performance.now();
  try {
    const { holder } = await KeyringHolder.open(
      storage,
      new LocalKeyProvider(loadOrCreateMasterKey(config.master_key_file).key),
      Date.now(),
    );
    const keyring = holder.current();
    const total = namespaces * perNamespace;
    const batch = 5000;
    let writes: StorageWrite[] = [];
    let done = 0;
    for (let i = 0; i < namespaces; i++) {
      for (let j = 0; j < perNamespace; j++) {
        writes.push(
          ...sealedVersionWrites(keyring, new RecordSeal(() => keyring.recordKeys()), {
            namespace: `large/ns${i}`,
            key: `k${j}`,
            version: 1,
            type: 'secret',
            value: VALUE,
            createdAt: Date.now(),
            previous: undefined,
          }),
        );
        if (++done % batch === 0 || done === total) {
          const these = writes;
          writes = [];
          await storage.atomic([], () => ({ writes: these, result: undefined }));
          if (done % 100_000 === 0 || done === total) {
            const s = (performance.now() - started) / 1000;
            process.stdout.write(
              `  seeded ${done.toLocaleString('en')} / ${total.toLocaleString('en')} keys (${(done / s).toFixed(0)} keys/s)\n`,
            );
          }
        }
      }
    }
  } finally {
    await storage.close();
  }
  return (performance.now() - started) / 1000;
}

interface StoreRun {
  readonly keys: number;
  readonly seedSeconds: number;
  readonly startupMs: number;
  readonly read: LoadResult;
  readonly memory: { pid: number; rssMb: number; anonMb: number }[];
}

async function measureStore(
  namespaces: number,
  perNamespace: number,
  seconds: number,
  connections: number,
): Promise<StoreRun> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-large-'));
  const root = generateToken().value;
  let server: RunningServer | undefined;
  try {
    console.log(
      `store of ${(namespaces * perNamespace).toLocaleString('en')} keys in ${namespaces.toLocaleString('en')} namespaces:`,
    );
    const seedSeconds = await seed(dir, root, namespaces, perNamespace);
    server = await startCoffer({
      dataDir: dir,
      rootToken: root,
      workers: availableParallelism(),
      core: null,
    });
    console.log(`  fresh start-up: ${server.startupMs.toFixed(0)} ms`);
    const reader = String(
      (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const lua = shape.randomKeys('/v1/kv/large/', namespaces, perNamespace, reader);
    await runWrk({ url: server.url, lua, connections, seconds: 1 });
    const read = await runWrk({ url: server.url, lua, connections, seconds });
    if (read.failedStatus > 0 || read.errors > 0)
      throw new Error(
        `random reads failed: ${read.failedStatus} statuses ≥ 400, ${read.errors} errors`,
      );
    console.log(
      `  random secret reads: ${read.requestsPerSecond.toFixed(0)} req/s, p50 ${read.p50Ms.toFixed(2)} ms, p99 ${read.p99Ms.toFixed(2)} ms`,
    );
    const memory = server
      .servingPids()
      .map((pid) => ({ pid, rssMb: residentMb(pid, 'VmRSS'), anonMb: residentMb(pid, 'RssAnon') }));
    for (const m of memory)
      console.log(
        `  worker ${m.pid}: resident ${m.rssMb.toFixed(0)} MB (private ${m.anonMb.toFixed(0)} MB, the rest is LMDB's shared file mapping)`,
      );
    return {
      keys: namespaces * perNamespace,
      seedSeconds,
      startupMs: server.startupMs,
      read,
      memory,
    };
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
  const keys = Number(args.keys);
  const namespaces = Number(args.namespaces);
  const seconds = Number(args.seconds);
  const connections = Number(args.connections);
  const small = await measureStore(10, 100, seconds, connections);
  const large = await measureStore(namespaces, Math.ceil(keys / namespaces), seconds, connections);
  const ratio = large.read.requestsPerSecond / small.read.requestsPerSecond;
  const maxRss = Math.max(...large.memory.map((m) => m.rssMb));
  console.log(`\nlarge store — ${new Date().toISOString()} — ${describeMachine()}`);
  console.log(
    `  random reads, ${large.keys.toLocaleString('en')} keys vs 1,000 keys   ${ratio.toFixed(2)}   (target ≥ 0.8)`,
  );
  console.log(
    `  fresh start-up with ${large.keys.toLocaleString('en')} keys          ${(large.startupMs / 1000).toFixed(2)} s   (target ≤ 2 s)`,
  );
  console.log(
    `  resident memory per worker after the run    ${maxRss.toFixed(0)} MB   (target ≤ 250 MB)`,
  );
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `large-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: describeMachine(),
        seconds,
        connections,
        small,
        large,
        ratio,
      },
      null,
      2,
    ),
  );
  console.log(`\nresults: ${file}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
