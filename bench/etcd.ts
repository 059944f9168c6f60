/**
 * `npm run bench:etcd`: Coffer (all workers) against etcd 3.4 with authentication on, both on loopback,
 * driven by the same wrk client at the same concurrency, alternating A B A B over 3 rounds: an
 * authenticated read of one key, and a durable write of a new key. Prints the Coffer/etcd ratios and
 * writes JSON to bench/results/. Installs etcd-server, etcd-client and wrk from Debian when missing, and
 * stops everything it started.
 *
 *   npm run bench:etcd -- [--seconds 10] [--connections 32] [--rounds 3]
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import * as shape from './cases.js';
import { describeMachine } from './machine.js';
import { resultsDir } from './report.js';
import { api } from './api.js';
import { startCoffer } from './servers.js';
import { ensureTools, runWrk, type LoadResult } from './wrk.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
  },
});
const seconds = Number(args.seconds);
const connections = Number(args.connections);
const rounds = Number(args.rounds);
const VALUE = 'p'.repeat(64);
const CLIENT = 'http://127.0.0.1:23790';

async function startEtcd(dir: string): Promise<ChildProcess> {
  const child = spawn('etcd', [
    '--name', 'bench', '--data-dir', join(dir, 'etcd'),
    '--listen-client-urls', CLIENT, '--advertise-client-urls', CLIENT,
    '--listen-peer-urls', 'http://127.0.0.1:23800', '--initial-advertise-peer-urls', 'http://127.0.0.1:23800',
    '--initial-cluster', 'bench=http://127.0.0.1:23800', '--auth-token-ttl', '3600', '--log-level', 'warn',
  ], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    try {
      execFileSync('etcdctl', ['--endpoints', CLIENT, 'endpoint', 'health'], { stdio: 'ignore', env: { ...process.env, ETCDCTL_API: '3' } });
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill();
  throw new Error('etcd did not become healthy');
}

/** Turns authentication on with a `bench` user allowed to read and write /bench/, and returns its token. */
async function enableAuth(): Promise<string> {
  const ctl = (...a: string[]): void => void execFileSync('etcdctl', ['--endpoints', CLIENT, ...a], { stdio: 'ignore', env: { ...process.env, ETCDCTL_API: '3' } });
  const rootPassword = generateToken().secret;
  const benchPassword = generateToken().secret;
  ctl('user', 'add', `root:${rootPassword}`, '--interactive=false');
  ctl('user', 'grant-role', 'root', 'root');
  ctl('role', 'add', 'bench');
  ctl('role', 'grant-permission', 'bench', '--prefix=true', 'readwrite', '/bench/');
  ctl('user', 'add', `bench:${benchPassword}`, '--interactive=false');
  ctl('user', 'grant-role', 'bench', 'bench');
  ctl('auth', 'enable');
  const res = await fetch(`${CLIENT}/v3/auth/authenticate`, { method: 'POST', body: JSON.stringify({ name: 'bench', password: benchPassword }) });
  const { token } = (await res.json()) as { token?: string };
  if (!token) throw new Error('etcd gave no auth token: is auth on?');
  const put = await fetch(`${CLIENT}/v3/kv/put`, {
    method: 'POST',
    headers: { authorization: token },
    body: JSON.stringify({ key: Buffer.from('/bench/secret').toString('base64'), value: Buffer.from(VALUE).toString('base64') }),
  });
  if (put.status !== 200) throw new Error(`etcd put failed: ${put.status}`);
  // The read must be refused without the token, or auth is not really on.
  const anonymous = await fetch(`${CLIENT}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/bench/secret').toString('base64') }) });
  if ('kvs' in ((await anonymous.json()) as object)) throw new Error('etcd served a read without a token: auth is off');
  const authorized = await fetch(`${CLIENT}/v3/kv/range`, { method: 'POST', headers: { authorization: token }, body: JSON.stringify({ key: Buffer.from('/bench/secret').toString('base64') }) });
  if (!('kvs' in ((await authorized.json()) as object))) throw new Error('etcd refused the bench user\'s read');
  return token;
}

async function main(): Promise<void> {
  ensureTools({ wrk: 'wrk', etcd: 'etcd-server', etcdctl: 'etcd-client', taskset: 'util-linux' });
  const dir = mkdtempSync(join(tmpdir(), 'coffer-vs-etcd-'));
  const root = generateToken().value;
  const etcd = await startEtcd(dir);
  const coffer = await startCoffer({ dataDir: dir, rootToken: root, workers: availableParallelism(), core: null });
  try {
    const etcdToken = await enableAuth();
    await api(coffer.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
    const reader = String((await api(coffer.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token);
    const writer = String((await api(coffer.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token);

    const cases = {
      read: {
        coffer: { url: coffer.url, lua: shape.get('/v1/kv/bench/app/secret', reader) },
        etcd: { url: CLIENT, lua: shape.etcdRange('/bench/secret', etcdToken) },
      },
      write: {
        coffer: { url: coffer.url, lua: shape.putNew('/v1/kv/bench/writes/k', writer, { value: VALUE, type: 'secret' }) },
        etcd: { url: CLIENT, lua: shape.etcdPutNew('/bench/writes/k', VALUE, etcdToken) },
      },
    } as const;
    const results: { round: number; case: string; system: string; result: LoadResult }[] = [];
    for (const [name, pair] of Object.entries(cases)) {
      for (const { url, lua } of Object.values(pair)) await runWrk({ url, lua, connections, seconds: 1 }); // warm-up
      for (let round = 1; round <= rounds; round++) {
        for (const [system, { url, lua }] of Object.entries(pair)) {
          const result = await runWrk({ url, lua, connections, seconds });
          if (result.failedStatus > 0 || result.errors > 0) throw new Error(`${system} ${name}: ${result.failedStatus} failed responses, ${result.errors} errors`);
          results.push({ round, case: name, system, result });
          console.log(`round ${round}  ${name.padEnd(6)} ${system.padEnd(7)} ${result.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms`);
        }
      }
    }
    const mean = (name: string, system: string): number => {
      const xs = results.filter((r) => r.case === name && r.system === system).map((r) => r.result.requestsPerSecond);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    };
    const ratios = { read: mean('read', 'coffer') / mean('read', 'etcd'), write: mean('write', 'coffer') / mean('write', 'etcd') };
    console.log(`\nCoffer vs etcd 3.4 (auth on) — ${new Date().toISOString()} — ${describeMachine()}`);
    console.log(`wrk ${connections} connections, ${seconds} s per run, ${rounds} rounds A B A B; Coffer with ${availableParallelism()} workers`);
    console.log(`  authenticated read   coffer ${mean('read', 'coffer').toFixed(0)}  etcd ${mean('read', 'etcd').toFixed(0)}  ratio ${ratios.read.toFixed(2)}  (target ≥ 1.5)`);
    console.log(`  durable write        coffer ${mean('write', 'coffer').toFixed(0)}  etcd ${mean('write', 'etcd').toFixed(0)}  ratio ${ratios.write.toFixed(2)}  (target ≥ 1.0)`);
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `etcd-${new Date().toISOString().replaceAll(':', '-')}.json`);
    writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), machine: describeMachine(), connections, seconds, rounds, results, ratios }, null, 2));
    console.log(`\nresults: ${file}`);
  } finally {
    await coffer.stop();
    await new Promise<void>((resolve) => {
      etcd.once('exit', () => resolve());
      etcd.kill('SIGTERM');
    });
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
