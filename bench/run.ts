/**
 * `npm run bench`: Coffer on a fresh data directory with all its workers, seeded, driven by wrk (pinned
 * to core 1) for each case; then Coffer as one process pinned to core 0 against a bare Express 5 route
 * pinned the same way; then the audit log's cost: the same secret read and secret write against Coffer as
 * one process with and without its audit log, alternated for several rounds (the machine's drift hits both
 * alike). Prints a table and the targets, and writes JSON to bench/results/. (`npm run bench:all` runs this
 * and the etcd comparison and writes one report of both: bench/all.ts.)
 *
 *   npm run bench -- [--seconds 10] [--connections 32] [--rounds 5] [--workers N] [--only all-workers|one-process|audit-cost|flood|namespace-read|waits|run-startup|jwt-login|vault-read|write-scaling|events]
 *   npm run bench -- --storage postgres [--seconds 10] [--rounds 5]   (PostgreSQL beside LMDB: bench/storage.ts)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { type EventsRound, eventsCost } from './events-bench.js';
import { type JwtLoginRound, jwtLoginCost, printJwtLogin } from './jwt-login.js';
import { describeMachine, machine, pinning } from './machine.js';
import {
  type NamespaceReadRound,
  namespaceReadCost,
  printNamespaceRead,
} from './namespace-read.js';
import { openLoopProcess } from './open-loop.js';
import {
  median,
  printTable,
  printTargets,
  type Row,
  resultsDir,
  type Target,
  target,
} from './report.js';
import { printRunStartup, type RunStartup, runStartup } from './run-startup.js';
import { type RunningServer, startBareExpress, startCoffer, startDirectCoffer } from './servers.js';
import { storageBench } from './storage.js';
import { printVaultRead, type VaultReadRound, vaultReadCost } from './vault-read.js';
import { printWaits, type WaitsRound, waitsCost } from './waits.js';
import { type WriteScalingRound, writeScaling } from './write-scaling.js';
import { ensureTools, type LoadResult, runWrk } from './wrk.js';

const { values: args } = parseArgs({
  strict: false,
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    // 'all-workers', 'one-process', 'audit-cost', 'flood', 'namespace-read', 'waits', 'run-startup', 'jwt-login', 'vault-read', 'write-scaling' or 'events'
    only: { type: 'string' },
    /** The server's workers where it runs with all of them (default: the machine's cores). */
    workers: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    storage: { type: 'string' }, // 'postgres': bench/storage.ts instead
  },
});
if (
  args.workers !== undefined &&
  !(Number.isInteger(Number(args.workers)) && Number(args.workers) >= 1)
) {
  console.error('--workers takes a positive whole number');
  process.exit(2);
}
const seconds = Number(args.seconds);
const connections = Number(args.connections);
const rounds = Number(args.rounds);
const VALUE = 'p'.repeat(64);

async function measure(url: string, lua: string, core = 1): Promise<LoadResult> {
  await runWrk({ url, lua, connections, seconds: 1, core }); // warm-up: JIT, caches
  return runWrk({ url, lua, connections, seconds, core });
}

interface Seeded {
  readonly reader: string;
  readonly readerId: string;
  readonly writer: string;
  readonly idleId: string;
}

async function seed(server: RunningServer, root: string): Promise<Seeded> {
  const { url } = server;
  await api(url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
  await api(url, root, 'PUT', '/v1/kv/bench/app/config', { value: VALUE, type: 'config' });
  for (let i = 0; i < 5; i++)
    await api(url, root, 'PUT', '/v1/kv/bench/app/versioned', {
      value: `${VALUE}${i}`,
      type: 'secret',
    });
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) =>
        api(url, root, 'PUT', `/v1/kv/bench/list/k${String(i + j).padStart(4, '0')}`, {
          value: VALUE,
          type: 'config',
        }),
      ),
    );
  }
  const reader = await api(url, root, 'POST', '/v1/auth/token', { role: 'reader' });
  const writer = await api(url, root, 'POST', '/v1/auth/token', { role: 'writer' });
  // A token nobody uses: its wrong secrets cannot be told wrong without argon2 (auth/authenticator.ts).
  const idle = await api(url, root, 'POST', '/v1/auth/token', { role: 'reader' });
  return {
    reader: String(reader.token),
    readerId: String(reader.id),
    writer: String(writer.token),
    idleId: String(idle.id),
  };
}

export interface BenchRun {
  readonly rows: Row[];
  readonly targets: Target[];
  readonly namespaceRead?: readonly NamespaceReadRound[];
  readonly waits?: readonly WaitsRound[];
  readonly runStartup?: RunStartup;
  readonly jwtLogin?: readonly JwtLoginRound[];
  readonly vaultRead?: readonly VaultReadRound[];
  readonly writeScaling?: readonly WriteScalingRound[];
  readonly events?: readonly EventsRound[];
}

/** Runs every case (or the `only` group) and judges the targets. */
export async function runBench(only: string | undefined): Promise<BenchRun> {
  ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
  const rows: Row[] = [];
  const root = generateToken().value;
  const workers = args.workers === undefined ? availableParallelism() : Number(args.workers);

  // 1. All workers.
  if (only === undefined || only === 'all-workers') await allWorkers(rows, root, workers);
  // 1b. Only the reads and the floods, with all workers.
  if (only === 'flood') await floodOnly(rows, root, workers);
  // 2. One process on core 0 against a bare Express 5 route on core 0.
  if (only === undefined || only === 'one-process') await oneProcess(rows, root);
  // 3. The audit log's cost on the read path.
  if (only === undefined || only === 'audit-cost') await auditCost(rows, root);
  const applications = [
    'namespace-read',
    'waits',
    'run-startup',
    'jwt-login',
    'vault-read',
    'write-scaling',
    'events',
  ];
  const targets = only !== undefined && applications.includes(only) ? [] : targetsOf(rows, workers);
  const run: { -readonly [K in keyof BenchRun]: BenchRun[K] } = { rows, targets };
  // 4. A namespace's values in one call against single reads, CPU per value.
  if (only === undefined || only === 'namespace-read') {
    const cost = await namespaceReadCost(root, { seconds, rounds, connections });
    targets.push(cost.target);
    run.namespaceRead = cost.rounds;
  }
  // 5. Reads beside 500 held waits.
  if (only === undefined || only === 'waits') {
    const cost = await waitsCost(root, { seconds, rounds, connections });
    targets.push(cost.target);
    run.waits = cost.rounds;
  }
  // 6. coffer run's start-up beside node -e 0.
  if (only === undefined || only === 'run-startup')
    run.runStartup = await runStartup(root, rounds * 4);
  // 7. JWT logins against token creations; reads during a flood of bad JWTs against the control.
  if (only === undefined || only === 'jwt-login') {
    const cost = await jwtLoginCost(root, { seconds, rounds, connections });
    targets.push(...cost.targets);
    run.jwtLogin = cost.rounds;
  }
  // 8. The same secret read through Vault's dialect against the native read.
  if (only === undefined || only === 'vault-read') {
    const cost = await vaultReadCost(root, { seconds, rounds, connections });
    targets.push(cost.target);
    run.vaultRead = cost.rounds;
  }
  // 9. Durable writes with 1, 2 and all workers.
  if (only === undefined || only === 'write-scaling') {
    const scaling = await writeScaling(root, { seconds, rounds, connections, workers });
    targets.push(...scaling.targets);
    run.writeScaling = scaling.rounds;
  }
  // 10. Issue #41's change events: write → event latency, and what 1,000 open streams cost reads.
  if (only === undefined || only === 'events') {
    const cost = await eventsCost();
    targets.push(...cost.targets);
    run.events = cost.rounds;
  }
  return run;
}

async function main(): Promise<void> {
  if (args.storage === 'postgres') {
    ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
    printTargets(await storageBench({ seconds, rounds, connections }));
    return;
  }
  if (args.storage !== undefined && args.storage !== 'lmdb') {
    console.error('--storage takes postgres (LMDB is what the other cases run on)');
    process.exit(2);
  }
  const run = await runBench(args.only as string | undefined);
  report(run);
}

async function allWorkers(rows: Row[], root: string, workers: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const all = await startCoffer({ dataDir: dir, rootToken: root, workers, core: null });
  try {
    const t = await seed(all, root);
    const cases: [string, string][] = [
      ['secret read (latest)', shape.get('/v1/kv/bench/app/secret', t.reader)],
      ['config read', shape.get('/v1/kv/bench/app/config', t.reader)],
      ['read of version 2', shape.get('/v1/kv/bench/app/versioned?version=2', t.reader)],
      [
        'secret write (durable)',
        shape.putNew('/v1/kv/bench/writes/k', t.writer, { value: VALUE, type: 'secret' }),
      ],
      [
        'token create (argon2id)',
        shape.post('/v1/auth/token', root, { role: 'reader', expires_in: 600 }),
      ],
      [
        '90/10 read/write mix',
        shape.readWriteMix('/v1/kv/bench/app/secret', '/v1/kv/bench/mix/k', t.writer, {
          value: VALUE,
          type: 'secret',
        }),
      ],
      ['list 1,000-key namespace', shape.get('/v1/kv/bench/list/', t.reader)],
    ];
    for (const [name, lua] of cases)
      rows.push({ case: name, server: `coffer × ${workers}`, result: await measure(all.url, lua) });

    await floods(rows, all.url, t, `coffer × ${workers}`);
  } finally {
    await all.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The good-token read while another client floods: wrong secrets of the reader's own token id and of a
 * token nobody uses (wrk, closed loop), tokens of unknown ids (wrk), and wrong secrets of the unused token
 * fired open loop at 1,000/s over 200 connections.
 */
async function floods(rows: Row[], url: string, t: Seeded, server: string): Promise<void> {
  const read = shape.get('/v1/kv/bench/app/secret', t.reader);
  await runWrk({ url, lua: read, connections, seconds: 1 });
  // The normal read again, before and after the floods: each flood is judged against the best of them.
  rows.push({
    case: NORMAL_BEFORE,
    server,
    result: await runWrk({ url, lua: read, connections, seconds }),
  });
  for (const [name, flood] of [
    ['wrong-secret flood', shape.wrongTokenFlood('/v1/kv/bench/app/secret', t.readerId)],
    [IDLE_FLOOD, shape.wrongTokenFlood('/v1/kv/bench/app/secret', t.idleId)],
    ['unknown-id flood', shape.wrongTokenFlood('/v1/kv/bench/app/secret', 'UnknownIdBench00')],
  ] as const) {
    const [good, bad] = await Promise.all([
      runWrk({ url, lua: read, connections, seconds }),
      runWrk({ url, lua: flood, connections, seconds }),
    ]);
    rows.push({ case: `secret read during ${name}`, server, result: good });
    rows.push({ case: `  (the ${name})`, server, result: bad });
  }
  // The open loop twice: wrong secrets, then — the control — the reader's correct token at the same rate
  // over the same connections, for what 1,000 requests a second cost this machine whatever they are.
  for (const [name, token] of [
    ['open-loop flood', undefined],
    [OPEN_LOOP_CONTROL, t.reader],
  ] as const) {
    const [good, sent] = await Promise.all([
      runWrk({ url, lua: read, connections, seconds }),
      openLoopProcess(
        {
          url,
          perSecond: 1000,
          connections: 200,
          seconds,
          path: '/v1/kv/bench/app/secret',
          tokenId: t.idleId,
          ...(token ? { token } : {}),
        },
        1,
      ),
    ]);
    rows.push({ case: `secret read during ${name}`, server, result: good });
    console.log(
      `${name}: ${sent.sent} sent at 1,000/s over 200 connections, ${sent.answered} answered: ${JSON.stringify(sent.byStatus)}`,
    );
  }
  rows.push({
    case: NORMAL_AFTER,
    server,
    result: await runWrk({ url, lua: read, connections, seconds }),
  });
}

const NORMAL_BEFORE = 'secret read, before the floods';
const NORMAL_AFTER = 'secret read, after the floods';

const OPEN_LOOP_CONTROL = 'open-loop correct reads (control)';
const IDLE_FLOOD = 'wrong-secret flood at an unused token';

async function floodOnly(rows: Row[], root: string, workers: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const all = await startCoffer({ dataDir: dir, rootToken: root, workers, core: null });
  try {
    const t = await seed(all, root);
    rows.push({
      case: 'secret read (latest)',
      server: `coffer × ${workers}`,
      result: await measure(all.url, shape.get('/v1/kv/bench/app/secret', t.reader)),
    });
    await floods(rows, all.url, t, `coffer × ${workers}`);
  } finally {
    await all.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function oneProcess(rows: Row[], root: string): Promise<void> {
  const dir1 = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const one = await startCoffer({ dataDir: dir1, rootToken: root, workers: 1, core: 0 });
  try {
    const t = await seed(one, root);
    rows.push({
      case: 'secret read (latest)',
      server: 'coffer × 1',
      result: await measure(one.url, shape.get('/v1/kv/bench/app/secret', t.reader)),
    });
    rows.push({
      case: 'secret write (durable)',
      server: 'coffer × 1',
      result: await measure(
        one.url,
        shape.putNew('/v1/kv/bench/writes/k', t.writer, { value: VALUE, type: 'secret' }),
      ),
    });
  } finally {
    await one.stop();
    rmSync(dir1, { recursive: true, force: true });
  }
  const bare = await startBareExpress(0);
  try {
    rows.push({
      case: 'bare Express 5 route',
      server: 'express × 1',
      result: await measure(bare.url, shape.get('/v1/kv/bench/app/secret', 'x')),
    });
  } finally {
    await bare.stop();
  }
}

const AUDITED = { read: 'secret read', write: 'secret write' } as const;
const auditCase = (what: keyof typeof AUDITED, audit: boolean): string =>
  `${AUDITED[what]}, audit ${audit ? 'on' : 'off'}`;

async function auditCost(rows: Row[], root: string): Promise<void> {
  for (let round = 1; round <= rounds; round++) {
    // Alternate which goes first, so neither always runs on a warmer or cooler machine.
    const order = round % 2 === 1 ? [true, false] : [false, true];
    for (const audit of order) {
      const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
      const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, audit);
      try {
        await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', {
          value: VALUE,
          type: 'secret',
        });
        const reader = await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' });
        const writer = await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' });
        const label = `direct #${round}`;
        rows.push({
          case: auditCase('read', audit),
          server: label,
          result: await measure(
            server.url,
            shape.get('/v1/kv/bench/app/secret', String(reader.token)),
          ),
        });
        rows.push({
          case: auditCase('write', audit),
          server: label,
          result: await measure(
            server.url,
            shape.putNew('/v1/kv/bench/writes/k', String(writer.token), {
              value: VALUE,
              type: 'secret',
            }),
          ),
        });
      } finally {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
}

/**
 * The audit log's cost: per round, 1 - (audited / unaudited) requests per second of the pair measured back
 * to back; the median over the rounds, so that one round disturbed by the machine does not decide it.
 */
function auditCostOf(rows: readonly Row[], what: keyof typeof AUDITED): number {
  const costs: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const rps = (name: string): number | undefined =>
      rows.find((r) => r.case === name && r.server === `direct #${round}`)?.result
        .requestsPerSecond;
    const [on, off] = [rps(auditCase(what, true)), rps(auditCase(what, false))];
    if (on !== undefined && off !== undefined) costs.push(1 - on / off);
  }
  return median(costs);
}

function targetsOf(rows: readonly Row[], workers: number): Target[] {
  const find = (name: string, server: string): LoadResult | undefined =>
    rows.find((r) => r.case === name && r.server === server)?.result;
  const rps = (name: string, server: string): number =>
    find(name, server)?.requestsPerSecond ?? NaN;
  const all = `coffer × ${workers}`;
  // "Normal" for the floods: the best of the plain secret reads, so that no flood is flattered by a slow one.
  const normal = Math.max(
    ...['secret read (latest)', NORMAL_BEFORE, NORMAL_AFTER]
      .map((name) => rps(name, all))
      .filter((v) => !Number.isNaN(v)),
  );
  return [
    target(
      'one-process secret read / bare Express route',
      rps('secret read (latest)', 'coffer × 1') / rps('bare Express 5 route', 'express × 1'),
      '≥',
      0.8,
    ),
    target(
      'p99 of the secret read, all workers (ms)',
      find('secret read (latest)', all)?.p99Ms ?? NaN,
      '≤',
      10,
    ),
    target(
      'reads during a wrong-secret flood / normal',
      rps('secret read during wrong-secret flood', all) / normal,
      '≥',
      0.8,
    ),
    target(
      'reads during a wrong-secret flood at an unused token / normal',
      rps(`secret read during ${IDLE_FLOOD}`, all) / normal,
      '≥',
      0.8,
    ),
    target(
      'reads during an unknown-id flood / normal',
      rps('secret read during unknown-id flood', all) / normal,
      '≥',
      0.8,
    ),
    target(
      'reads during an open-loop flood / normal',
      rps('secret read during open-loop flood', all) / normal,
      '≥',
      0.8,
    ),
    target(
      'reads during an open-loop flood / during its control',
      rps('secret read during open-loop flood', all) /
        rps(`secret read during ${OPEN_LOOP_CONTROL}`, all),
      '≥',
      0.8,
    ),
    target(
      'audit cost on the secret read (median 1 - on/off)',
      auditCostOf(rows, 'read'),
      '≤',
      0.05,
    ),
    target(
      'audit cost on the secret write (median 1 - on/off)',
      auditCostOf(rows, 'write'),
      '≤',
      0.1,
    ),
  ].filter((t) => !Number.isNaN(t.value));
}

export function benchHeader(): string {
  return `wrk: ${connections} connections, ${seconds} s per case (after 1 s warm-up), ${pinning ? 'wrk pinned to core 1; "× 1" servers pinned to core 0' : 'nothing pinned'}`;
}

function report({
  rows,
  targets,
  namespaceRead,
  waits,
  runStartup: startup,
  jwtLogin,
  vaultRead,
  writeScaling: scaling,
  events,
}: BenchRun): void {
  printTable(
    `Coffer benchmark — ${new Date().toISOString()} — ${describeMachine()}\n${benchHeader()}`,
    rows,
  );
  if (namespaceRead) printNamespaceRead(namespaceRead);
  if (waits) printWaits(waits);
  if (startup) printRunStartup(startup);
  if (jwtLogin) printJwtLogin(jwtLogin);
  if (vaultRead) printVaultRead(vaultRead);
  if (events) for (const round of events) console.log(`\n${round.case}\n${round.summary}`);
  printTargets(targets);
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `bench-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        machine: machine(),
        connections,
        seconds,
        rows,
        targets,
        namespaceRead,
        waits,
        runStartup: startup,
        jwtLogin,
        vaultRead,
        writeScaling: scaling,
        events,
      },
      null,
      2,
    ),
  );
  console.log(`\nresults: ${file}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
