/**
 * `npm run bench:etcd`: Coffer (all workers) against etcd 3.4 with authentication on, both on loopback,
 * driven by the same wrk client at the same concurrency, alternating A B A B over 3 rounds: an
 * authenticated read of one key, and a durable write of a new key. Each read round also measures the
 * machine's ceiling, a bare node:http cluster of as many workers answering a fixed body
 * (http-ceiling.ts). Prints each round's Coffer/etcd ratio (and Coffer/ceiling for reads) and the median
 * of the rounds against issue #42's targets, and writes JSON to bench/results/. Installs etcd-server, etcd-client and
 * wrk from Debian when missing, and stops everything it started.
 *
 * Before the rounds of a case, each system takes `--warm-up` seconds of that case's load (default 10):
 * Coffer's JIT was still optimizing and deoptimizing its write path 12 s into a load on a slow machine
 * (2026-11-27, `--trace-opt`/`--trace-deopt`), so with 1 s the first round measured it half-warm.
 *
 *   npm run bench:etcd -- [--seconds 10] [--connections 32] [--rounds 3] [--warm-up 10] [--only read|write]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { startCeiling } from './http-ceiling.js';
import { describeMachine, machine } from './machine.js';
import { markdownTable, median, resultsDir, type Target, target } from './report.js';
import { startCoffer } from './servers.js';
import { ensureTools, type LoadResult, runWrk } from './wrk.js';

const { values: args } = parseArgs({
  strict: false,
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
    'warm-up': { type: 'string', default: '10' },
    only: { type: 'string' },
  },
});
const seconds = Number(args.seconds);
const connections = Number(args.connections);
const rounds = Number(args.rounds);
const warmUp = Number(args['warm-up']);
const only = args.only as string | undefined;
const VALUE = 'p'.repeat(64);
const CLIENT = 'http://127.0.0.1:23790';

async function startEtcd(dir: string): Promise<ChildProcess> {
  const child = spawn(
    'etcd',
    [
      '--name',
      'bench',
      '--data-dir',
      join(dir, 'etcd'),
      '--listen-client-urls',
      CLIENT,
      '--advertise-client-urls',
      CLIENT,
      '--listen-peer-urls',
      'http://127.0.0.1:23800',
      '--initial-advertise-peer-urls',
      'http://127.0.0.1:23800',
      '--initial-cluster',
      'bench=http://127.0.0.1:23800',
      '--auth-token-ttl',
      '3600',
      '--log-level',
      'warn',
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100; i++) {
    try {
      execFileSync('etcdctl', ['--endpoints', CLIENT, 'endpoint', 'health'], {
        stdio: 'ignore',
        env: { ...process.env, ETCDCTL_API: '3' },
      });
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
  const ctl = (...a: string[]): void =>
    void execFileSync('etcdctl', ['--endpoints', CLIENT, ...a], {
      stdio: 'ignore',
      env: { ...process.env, ETCDCTL_API: '3' },
    });
  const rootPassword = generateToken().secret;
  const benchPassword = generateToken().secret;
  ctl('user', 'add', `root:${rootPassword}`, '--interactive=false');
  ctl('user', 'grant-role', 'root', 'root');
  ctl('role', 'add', 'bench');
  ctl('role', 'grant-permission', 'bench', '--prefix=true', 'readwrite', '/bench/');
  ctl('user', 'add', `bench:${benchPassword}`, '--interactive=false');
  ctl('user', 'grant-role', 'bench', 'bench');
  ctl('auth', 'enable');
  const res = await fetch(`${CLIENT}/v3/auth/authenticate`, {
    method: 'POST',
    body: JSON.stringify({ name: 'bench', password: benchPassword }),
  });
  const { token } = (await res.json()) as { token?: string };
  if (!token) throw new Error('etcd gave no auth token: is auth on?');
  const put = await fetch(`${CLIENT}/v3/kv/put`, {
    method: 'POST',
    headers: { authorization: token },
    body: JSON.stringify({
      key: Buffer.from('/bench/secret').toString('base64'),
      value: Buffer.from(VALUE).toString('base64'),
    }),
  });
  if (put.status !== 200) throw new Error(`etcd put failed: ${put.status}`);
  // The read must be refused without the token, or auth is not really on.
  const anonymous = await fetch(`${CLIENT}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('/bench/secret').toString('base64') }),
  });
  if ('kvs' in ((await anonymous.json()) as object))
    throw new Error('etcd served a read without a token: auth is off');
  const authorized = await fetch(`${CLIENT}/v3/kv/range`, {
    method: 'POST',
    headers: { authorization: token },
    body: JSON.stringify({ key: Buffer.from('/bench/secret').toString('base64') }),
  });
  if (!('kvs' in ((await authorized.json()) as object)))
    throw new Error("etcd refused the bench user's read");
  return token;
}

export interface EtcdRound {
  readonly round: number;
  readonly case: 'read' | 'write';
  readonly coffer: LoadResult;
  readonly etcd: LoadResult;
  readonly ratio: number;
  /** Reads: the bare node:http cluster in the same round, and Coffer's share of it. */
  readonly ceiling?: LoadResult;
  readonly ofCeiling?: number;
}

export interface EtcdRun {
  readonly connections: number;
  readonly seconds: number;
  readonly rounds: EtcdRound[];
  readonly targets: Target[];
}

/** Issue #42's targets: reads ≥ 3× etcd and ≥ 0.35× the ceiling; durable writes ≥ 1.2× etcd, p99 ≤ 1.5× etcd's. */
const WANTED = { read: 3, write: 1.2 } as const;
const CEILING_SHARE = 0.35;
const WRITE_P99_RATIO = 1.5;
const NAMES = { read: 'authenticated read', write: 'durable write' } as const;

/** Runs the comparison; each round's ratio is Coffer's and etcd's requests per second measured back to back. */
export async function runEtcdComparison(): Promise<EtcdRun> {
  ensureTools({ wrk: 'wrk', etcd: 'etcd-server', etcdctl: 'etcd-client', taskset: 'util-linux' });
  const dir = mkdtempSync(join(tmpdir(), 'coffer-vs-etcd-'));
  const root = generateToken().value;
  const etcd = await startEtcd(dir);
  const coffer = await startCoffer({
    dataDir: dir,
    rootToken: root,
    workers: availableParallelism(),
    core: null,
  });
  const ceiling = await startCeiling(availableParallelism());
  try {
    const etcdToken = await enableAuth();
    await api(coffer.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
    const reader = String(
      (await api(coffer.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const writer = String(
      (await api(coffer.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token,
    );

    const cases = {
      read: {
        coffer: { url: coffer.url, lua: shape.get('/v1/kv/bench/app/secret', reader) },
        etcd: { url: CLIENT, lua: shape.etcdRange('/bench/secret', etcdToken) },
        ceiling: { url: ceiling.url, lua: shape.get('/', reader) },
      },
      write: {
        coffer: {
          url: coffer.url,
          lua: shape.putNew('/v1/kv/bench/writes/k', writer, { value: VALUE, type: 'secret' }),
        },
        etcd: { url: CLIENT, lua: shape.etcdPutNew('/bench/writes/k', VALUE, etcdToken) },
      },
    } as const;
    const measured: EtcdRound[] = [];
    for (const name of ['read', 'write'] as const) {
      if (only !== undefined && only !== name) continue;
      const pair = cases[name];
      for (const { url, lua } of Object.values(pair))
        await runWrk({ url, lua, connections, seconds: warmUp });
      for (let round = 1; round <= rounds; round++) {
        const results: Partial<Record<'coffer' | 'etcd' | 'ceiling', LoadResult>> = {};
        for (const system of Object.keys(pair) as ('coffer' | 'etcd' | 'ceiling')[]) {
          const { url, lua } = (pair as Record<string, { url: string; lua: string }>)[system]!;
          const result = await runWrk({ url, lua, connections, seconds });
          if (result.failedStatus > 0 || result.errors > 0)
            throw new Error(
              `${system} ${name}: ${result.failedStatus} failed responses, ${result.errors} errors`,
            );
          results[system] = result;
          console.log(
            `round ${round}  ${name.padEnd(6)} ${system.padEnd(7)} ${result.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms`,
          );
        }
        const {
          coffer: c,
          etcd: e,
          ceiling: h,
        } = results as Record<'coffer' | 'etcd', LoadResult> & { ceiling?: LoadResult };
        measured.push({
          round,
          case: name,
          coffer: c,
          etcd: e,
          ratio: c.requestsPerSecond / e.requestsPerSecond,
          ...(h ? { ceiling: h, ofCeiling: c.requestsPerSecond / h.requestsPerSecond } : {}),
        });
      }
    }
    const of = (name: 'read' | 'write') => measured.filter((r) => r.case === name);
    const targets = (['read', 'write'] as const)
      .filter((name) => of(name).length > 0)
      .flatMap((name) => [
        target(
          `${NAMES[name]}: Coffer / etcd (median of ${rounds} rounds)`,
          median(of(name).map((r) => r.ratio)),
          '≥',
          WANTED[name],
        ),
        ...(name === 'read'
          ? [
              target(
                `${NAMES[name]}: Coffer / bare node:http (median)`,
                median(of(name).map((r) => r.ofCeiling!)),
                '≥',
                CEILING_SHARE,
              ),
            ]
          : [
              target(
                `${NAMES[name]}: p99, Coffer / etcd (median)`,
                median(of(name).map((r) => r.coffer.p99Ms / r.etcd.p99Ms)),
                '≤',
                WRITE_P99_RATIO,
              ),
            ]),
      ]);
    return { connections, seconds, rounds: measured, targets };
  } finally {
    await ceiling.stop();
    await coffer.stop();
    await new Promise<void>((resolve) => {
      etcd.once('exit', () => resolve());
      etcd.kill('SIGTERM');
    });
    rmSync(dir, { recursive: true, force: true });
  }
}

export function etcdHeader(): string {
  return `etcd 3.4 with authentication on, both on loopback; wrk ${connections} connections, ${seconds} s per run after a ${warmUp}-s warm-up of each, ${rounds} rounds A B A B (reads A B C, C a bare node:http cluster of as many workers answering a fixed body); Coffer with ${availableParallelism()} workers`;
}

export function etcdMarkdown(run: EtcdRun): string {
  return markdownTable(
    [
      'case',
      'round',
      'Coffer req/s',
      'Coffer p99 ms',
      'etcd req/s',
      'etcd p99 ms',
      'Coffer / etcd',
      'bare node:http req/s',
      'Coffer / node:http',
    ],
    run.rounds.map((r) => [
      NAMES[r.case],
      r.round,
      r.coffer.requestsPerSecond.toFixed(0),
      r.coffer.p99Ms.toFixed(2),
      r.etcd.requestsPerSecond.toFixed(0),
      r.etcd.p99Ms.toFixed(2),
      r.ratio.toFixed(2),
      r.ceiling ? r.ceiling.requestsPerSecond.toFixed(0) : '',
      r.ofCeiling === undefined ? '' : r.ofCeiling.toFixed(2),
    ]),
  );
}

async function main(): Promise<void> {
  const run = await runEtcdComparison();
  console.log(
    `\nCoffer vs etcd — ${new Date().toISOString()} — ${describeMachine()}\n${etcdHeader()}`,
  );
  for (const r of run.rounds)
    console.log(
      `  round ${r.round}  ${NAMES[r.case].padEnd(20)} ratio ${r.ratio.toFixed(2)}${r.ofCeiling === undefined ? '' : `  of the ceiling ${r.ofCeiling.toFixed(2)}`}`,
    );
  for (const t of run.targets)
    console.log(
      `  ${t.name.padEnd(56)} ${t.value.toFixed(2)}  (${t.wanted})${t.met ? '' : '  MISSED'}`,
    );
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `etcd-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ date: new Date().toISOString(), machine: machine(), ...run }, null, 2),
  );
  console.log(`\nresults: ${file}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
