/**
 * What a change costs against the commit before it: that commit is built from the git history
 * (bench/git-build.ts), and its one-process server (bench/direct-server.ts, audit log on) runs beside this
 * build's, both pinned to core 0 with wrk on core 1. The load alternates between the two in short slices
 * (A B, B A, …), so that the machine's drift — other tenants, the disk's sync latency, which moves a
 * durable write's throughput by ±20% between minutes on some machines — falls on both alike. Per pair of
 * slices the ratio this / that, for the secret read and the durable write; reported: the median over the
 * pairs, and the server's CPU time per request (from /proc) likewise.
 *
 *   npm run build && node dist/bench/against-commit.js [--commit <sha>] [--this <sha>] [--case read|write] [--rounds 10] [--processes 1] [--seconds 3] [--storage postgres] [--stream] [--together]
 *
 * With --together both servers are loaded at once in every slice (a wrk of 16 connections each, both on
 * core 1), so that they share core 0 and whatever the machine does meanwhile (another tenant, the
 * hypervisor taking the core) falls on both in the same moment: each gets half the core, and the ratio of
 * their throughputs is the inverse ratio of their CPU per request. On machines whose speed moves ±20% from
 * second to second, alternated slices cannot resolve a cost of a few percent; together ones can.
 *
 * With --stream this build's server ships its audit log to one audit stream (COFFER_AUDIT_STREAMS,
 * syslog over TCP) whose receiver (bench/stream-sink.ts) reads and drops the lines, pinned with wrk on
 * core 1; the other build has none. So the figures are what one stream costs (issue #37).
 *
 * With --storage postgres each build's server runs on PostgreSQL (COFFER_PG_URL, by default the local test
 * server), in a schema of its own, dropped at the end.
 * (--rounds: pairs of slices per case; --processes: pairs of server processes, started one after the other, each
 * measured for --rounds pairs; --seconds: one slice.) The default commit is the last one before
 * the storage barrier (issue #12: it may cost at most 5%).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { processCpuSplit } from './cpu-accounting.js';
import { buildCommit, hasCommit } from './git-build.js';
import { describeMachine } from './machine.js';
import { median } from './report.js';
import { type RunningServer, startDirectCoffer } from './servers.js';
import { benchPgUrl, benchSchema, dropBenchSchemas } from './storage.js';
import { startStreamSink } from './stream-sink.js';
import { ensureTools, runWrk } from './wrk.js';

const BEFORE_BARRIER = 'd91f4985868acd894e2bfc808fb3a40af50087b1';
const { values: args } = parseArgs({
  options: {
    commit: { type: 'string', default: BEFORE_BARRIER },
    rounds: { type: 'string', default: '10' },
    /** Pairs of server processes, one after the other, each measured for --rounds pairs of slices. */
    processes: { type: 'string', default: '1' },
    /** Measure this commit's build instead of the working tree's (to find which commit a cost came from). */
    this: { type: 'string' },
    /** Only this case: read or write. */
    case: { type: 'string' },
    seconds: { type: 'string', default: '3' },
    storage: { type: 'string', default: 'lmdb' },
    stream: { type: 'boolean', default: false },
    together: { type: 'boolean', default: false },
  },
});
if (args.storage !== 'lmdb' && args.storage !== 'postgres') {
  console.error('--storage must be lmdb or postgres');
  process.exit(2);
}
const pgUrl = benchPgUrl();
/** The PostgreSQL schemas made for the subjects, dropped at the end. */
const schemas: string[] = [];
const commit = String(args.commit);
const rounds = Number(args.rounds);
const processes = Number(args.processes);
const seconds = Number(args.seconds);
const VALUE = 'p'.repeat(64);

type Build = 'this' | 'that';
const CASES = ['secret read', 'secret write (durable)'] as const;

/** Requests a second, and the server's CPU time (user + system, from /proc) per request. */
interface Measured {
  readonly rps: number;
  readonly cpuMicros: number;
  /** Of which in the kernel, on the process's behalf (its sockets, its files). */
  readonly systemMicros: number;
}

/** One case's ratios (this / that) over every pair of slices, and each pair of processes' median. */
interface Pooled {
  readonly rps: number[];
  readonly cpu: number[];
  readonly system: number[];
  readonly perProcess: number[];
}

/** One build's server, set up with a secret to read and a writer's token. */
interface Subject {
  readonly server: RunningServer;
  readonly dir: string;
  readonly lua: Record<(typeof CASES)[number], string>;
}

async function startSubject(
  script: string | undefined,
  root: string,
  extra: Record<string, string> = {},
): Promise<Subject> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const schema = benchSchema();
  if (args.storage === 'postgres') schemas.push(schema);
  const env: Record<string, string> = {
    ...(args.storage === 'postgres'
      ? { COFFER_STORAGE: 'postgres', COFFER_PG_URL: pgUrl, COFFER_PG_SCHEMA: schema }
      : {}),
    ...extra,
  };
  const server = await startDirectCoffer(
    { dataDir: dir, rootToken: root, core: 0, env, ...(script ? { script } : {}) },
    true,
  );
  await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
  const reader = String(
    (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
  );
  const writer = String(
    (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token,
  );
  return {
    server,
    dir,
    lua: {
      'secret read': shape.get('/v1/kv/bench/app/secret', reader),
      'secret write (durable)': shape.putNew('/v1/kv/bench/writes/k', writer, {
        value: VALUE,
        type: 'secret',
      }),
    },
  };
}

async function slice(
  subject: Subject,
  c: (typeof CASES)[number],
  secs: number,
  connections = 32,
): Promise<Measured> {
  const pid = subject.server.servingPids()[0]!;
  const before = processCpuSplit(pid);
  const result = await runWrk({
    url: subject.server.url,
    lua: subject.lua[c],
    connections,
    seconds: secs,
    core: 1,
  });
  const after = processCpuSplit(pid);
  const perRequest = (seconds: number) => (seconds / result.requests) * 1e6;
  return {
    rps: result.requestsPerSecond,
    cpuMicros: perRequest(after.user + after.system - before.user - before.system),
    systemMicros: perRequest(after.system - before.system),
  };
}

/** One pair of slices: alternated (this then that, or that then this), or both at once with --together. */
async function pairOfSlices(
  builds: Record<Build, Subject>,
  c: (typeof CASES)[number],
  pair: number,
): Promise<Record<Build, Measured>> {
  if (args.together) {
    const [a, b] = await Promise.all([
      slice(builds.this, c, seconds, 16),
      slice(builds.that, c, seconds, 16),
    ]);
    return { this: a, that: b };
  }
  const order: Build[] = pair % 2 === 1 ? ['this', 'that'] : ['that', 'this'];
  const m: Partial<Record<Build, Measured>> = {};
  for (const build of order) m[build] = await slice(builds[build], c, seconds);
  return m as Record<Build, Measured>;
}

async function main(): Promise<void> {
  ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
  if (!hasCommit(commit)) throw new Error(`commit ${commit} is not in this checkout's history`);
  const work = mkdtempSync(join(tmpdir(), 'coffer-against-'));
  const subjects: Subject[] = [];
  const stops: (() => void)[] = [];
  try {
    buildCommit(commit, join(work, 'build'));
    const root = generateToken().value;
    if (args.this) buildCommit(String(args.this), join(work, 'this'));
    const sink = args.stream ? await startStreamSink(1) : undefined;
    if (sink) stops.push(sink.stop);
    const that7 = commit.slice(0, 7);
    const cases = CASES.filter(
      (name) => args.case === undefined || name.includes(String(args.case)),
    );
    console.log(
      `${args.this ? String(args.this).slice(0, 7) : 'this build'} against ${that7}${args.storage === 'postgres' ? ', each on PostgreSQL' : ''}${args.stream ? ', this build with one audit stream (syslog over TCP)' : ''} — ${describeMachine()}; both servers on core 0, wrk (32 connections) on core 1${args.together ? ', both loaded at once (16 connections each)' : ''}, ${processes} pair(s) of processes × ${rounds} pairs of ${seconds}-s slices per case`,
    );
    const pooled = new Map(
      cases.map((c) => [c, { rps: [], cpu: [], system: [], perProcess: [] } as Pooled]),
    );
    for (let p = 1; p <= processes; p++) {
      // A new pair of processes each time: one process's luck (its heap's layout, what its JIT made of
      // the hot path) moved a build's throughput by up to 20% for its whole life on some machines.
      const builds: Record<Build, Subject> = {
        this: await startSubject(
          args.this ? join(work, 'this', 'dist', 'bench', 'direct-server.js') : undefined,
          root,
          sink ? { COFFER_AUDIT_STREAMS: `syslog+tcp://127.0.0.1:${sink.port}` } : {},
        ),
        that: await startSubject(join(work, 'build', 'dist', 'bench', 'direct-server.js'), root),
      };
      subjects.push(builds.this, builds.that);
      for (const c of cases) {
        for (const build of ['this', 'that'] as const) await slice(builds[build], c, 1); // warm-up
        const got = pooled.get(c)!;
        const mine: number[] = [];
        for (let pair = 1; pair <= rounds; pair++) {
          const m = await pairOfSlices(builds, c, pair);
          const [a, b] = [m.this, m.that];
          mine.push(a.rps / b.rps);
          got.rps.push(a.rps / b.rps);
          got.cpu.push(a.cpuMicros / b.cpuMicros);
          got.system.push(a.systemMicros / b.systemMicros);
          console.log(
            `${processes > 1 ? `processes ${p} ` : ''}pair ${String(pair).padStart(2)}  ${c.padEnd(24)} this ${a.rps.toFixed(0).padStart(6)} req/s ${a.cpuMicros.toFixed(0).padStart(4)} µs CPU (${a.systemMicros.toFixed(0)} system)   ${that7} ${b.rps.toFixed(0).padStart(6)} req/s ${b.cpuMicros.toFixed(0).padStart(4)} µs CPU (${b.systemMicros.toFixed(0)} system)   ratio ${(a.rps / b.rps).toFixed(3)}`,
          );
        }
        got.perProcess.push(median(mine));
      }
      for (const subject of subjects.splice(0)) {
        await subject.server.stop();
        rmSync(subject.dir, { recursive: true, force: true });
      }
    }
    for (const [c, got] of pooled) {
      const [throughput, cpu] = [median(got.rps), median(got.cpu)];
      console.log(
        `median ${c}: throughput ${throughput.toFixed(3)} (cost ${((1 - throughput) * 100).toFixed(1)}%), CPU per request ${cpu.toFixed(3)} (cost ${((cpu - 1) * 100).toFixed(1)}%); the kernel's part of it ${median(got.system).toFixed(3)}${processes > 1 ? `; each pair of processes: ${got.perProcess.map((r) => r.toFixed(3)).join(' ')}` : ''}`,
      );
    }
  } finally {
    for (const subject of subjects) {
      await subject.server.stop();
      rmSync(subject.dir, { recursive: true, force: true });
    }
    for (const stop of stops) stop();
    rmSync(work, { recursive: true, force: true });
    if (schemas.length > 0) await dropBenchSchemas(pgUrl, schemas);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
