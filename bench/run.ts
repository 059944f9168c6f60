/**
 * `npm run bench`: starts Coffer on a fresh data directory (pinned to one core), seeds it, and drives
 * each case with autocannon from a second process pinned to the other core. Prints req/s and p50/p99
 * latency per case and writes the results as JSON to bench/results/.
 *
 *   npm run bench -- --seconds 10 --connections 32
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import type { LoadResult, LoadSpec } from './load.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const MAIN = join(HERE, '..', 'src', 'main.js');
const LOAD = join(HERE, 'load.js');
const RESULTS = join(HERE, '..', '..', 'bench', 'results');

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
  },
});
const seconds = Number(args.seconds);
const connections = Number(args.connections);

const pinnable = cpus().length >= 2 && hasTaskset();
function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
/** Command and arguments, pinned to `core` when the machine allows it. */
function pinned(core: number, args: string[]): [string, string[]] {
  return pinnable ? ['taskset', ['-c', String(core), process.execPath, ...args]] : [process.execPath, args];
}

async function startServer(dataDir: string, rootToken: string): Promise<{ child: ChildProcess; url: string }> {
  const [cmd, cmdArgs] = pinned(0, [MAIN, 'serve']);
  const child = spawn(cmd, cmdArgs, {
    env: { ...process.env, COFFER_PORT: '0', COFFER_DATA_DIR: join(dataDir, 'data'), COFFER_MASTER_KEY_FILE: join(dataDir, 'master.key'), COFFER_ROOT_TOKEN: rootToken, COFFER_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`coffer exited with ${code}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"([^"]+)"[^\n]*coffer listening/.exec(out);
      if (m) {
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve({ child, url: m[1]! });
      }
    });
  });
}

async function api(url: string, token: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

function load(spec: LoadSpec): Promise<LoadResult> {
  const [cmd, cmdArgs] = pinned(1, [LOAD, JSON.stringify(spec)]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load exited with ${code}`))));
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const root = generateToken().value;
  const { child, url } = await startServer(dir, root);
  try {
    const value = 'p'.repeat(64);
    await api(url, root, 'PUT', '/v1/kv/bench/app/secret', { value, type: 'secret' });
    await api(url, root, 'PUT', '/v1/kv/bench/app/config', { value, type: 'config' });
    for (let i = 0; i < 5; i++) await api(url, root, 'PUT', '/v1/kv/bench/app/versioned', { value: `${value}${i}`, type: 'secret' });
    const reader = String((await api(url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token);
    const writer = String((await api(url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token);

    const base = { url, connections, seconds };
    const cases: [string, LoadSpec][] = [
      ['secret read (latest)', { ...base, method: 'GET', path: '/v1/kv/bench/app/secret', token: reader }],
      ['config read', { ...base, method: 'GET', path: '/v1/kv/bench/app/config', token: reader }],
      ['versioned read (?version=2)', { ...base, method: 'GET', path: '/v1/kv/bench/app/versioned?version=2', token: reader }],
      ['secret write (durable)', { ...base, method: 'PUT', path: '/v1/kv/bench/writes/k{n}', token: writer, body: JSON.stringify({ value, type: 'secret' }) }],
    ];
    const rows: { case: string; result: LoadResult }[] = [];
    for (const [name, spec] of cases) {
      // A warm-up second, so JIT compilation is not measured.
      await load({ ...spec, seconds: 1 });
      rows.push({ case: name, result: await load(spec) });
    }

    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, node ${process.version}`;
    console.log(`\nCoffer benchmark — ${new Date().toISOString()} — ${machine}`);
    console.log(`${connections} connections, ${seconds} s per case, server and client ${pinnable ? 'pinned to separate cores' : 'not pinned'}\n`);
    console.log(`${'case'.padEnd(30)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(7)} ${'non-2xx'.padStart(8)}`);
    for (const { case: name, result: r } of rows) {
      console.log(`${name.padEnd(30)} ${r.requestsPerSecond.toFixed(0).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${String(r.errors).padStart(7)} ${String(r.non2xx).padStart(8)}`);
    }
    mkdirSync(RESULTS, { recursive: true });
    const file = join(RESULTS, `bench-${new Date().toISOString().replaceAll(':', '-')}.json`);
    writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), machine, connections, seconds, pinned: pinnable, rows }, null, 2));
    console.log(`\nresults written to ${file}`);
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
