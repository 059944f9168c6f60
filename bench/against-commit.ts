/**
 * What a change costs against the commit before it: that commit is built from the git history
 * (bench/git-build.ts) and its one-process server (bench/direct-server.ts, audit log on) is measured against
 * this build's, both pinned to core 0 with wrk on core 1, alternating A B / B A over the rounds. Per round
 * the ratio this / that of the secret read and of the durable write, and the median over the rounds; also
 * the server's CPU time per request, which the disk's sync latency (a durable write's throughput swings by
 * ±20% between rounds on some machines) does not move.
 *
 *   npm run build && node dist/bench/against-commit.js [--commit <sha>] [--rounds 3] [--seconds 10]
 *
 * The default commit is the last one before the storage barrier (issue #12: it may cost at most 5%).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { buildCommit, hasCommit } from './git-build.js';
import { describeMachine } from './machine.js';
import { median } from './report.js';
import { startDirectCoffer } from './servers.js';
import { ensureTools, runWrk } from './wrk.js';

const BEFORE_BARRIER = 'd91f4985868acd894e2bfc808fb3a40af50087b1';
const { values: args } = parseArgs({
  options: {
    commit: { type: 'string', default: BEFORE_BARRIER },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
  },
});
const commit = String(args.commit);
const rounds = Number(args.rounds);
const seconds = Number(args.seconds);
const VALUE = 'p'.repeat(64);

type Build = 'this' | 'that';
const CASES = ['secret read', 'secret write (durable)'] as const;

/** Requests a second, and the server's CPU time (user + system, from /proc) per request. */
interface Measured {
  readonly rps: number;
  readonly cpuMicros: number;
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ
}

async function measureBuild(script: string | undefined, root: string): Promise<Record<(typeof CASES)[number], Measured>> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0, ...(script ? { script } : {}) }, true);
  try {
    await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
    const reader = String((await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token);
    const writer = String((await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token);
    const pid = server.servingPids()[0]!;
    const run = async (lua: string): Promise<Measured> => {
      await runWrk({ url: server.url, lua, connections: 32, seconds: 1, core: 1 });
      const before = cpuSeconds(pid);
      const result = await runWrk({ url: server.url, lua, connections: 32, seconds, core: 1 });
      return { rps: result.requestsPerSecond, cpuMicros: ((cpuSeconds(pid) - before) / result.requests) * 1e6 };
    };
    return {
      'secret read': await run(shape.get('/v1/kv/bench/app/secret', reader)),
      'secret write (durable)': await run(shape.putNew('/v1/kv/bench/writes/k', writer, { value: VALUE, type: 'secret' })),
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
  if (!hasCommit(commit)) throw new Error(`commit ${commit} is not in this checkout's history`);
  const work = mkdtempSync(join(tmpdir(), 'coffer-against-'));
  try {
    buildCommit(commit, join(work, 'build'));
    const that = join(work, 'build', 'dist', 'bench', 'direct-server.js');
    const root = generateToken().value;
    const ratios: Record<string, number[]> = Object.fromEntries(CASES.map((c) => [c, []]));
    const cpuRatios: Record<string, number[]> = Object.fromEntries(CASES.map((c) => [c, []]));
    const that7 = commit.slice(0, 7);
    console.log(`this build against ${that7} — ${describeMachine()}; one process on core 0, wrk (32 connections, ${seconds} s) on core 1`);
    for (let round = 1; round <= rounds; round++) {
      const order: Build[] = round % 2 === 1 ? ['this', 'that'] : ['that', 'this'];
      const got: Partial<Record<Build, Record<string, Measured>>> = {};
      for (const build of order) got[build] = await measureBuild(build === 'this' ? undefined : that, root);
      for (const c of CASES) {
        const [a, b] = [got.this![c]!, got.that![c]!];
        ratios[c]!.push(a.rps / b.rps);
        cpuRatios[c]!.push(a.cpuMicros / b.cpuMicros);
        console.log(`round ${round}  ${c.padEnd(24)} this ${a.rps.toFixed(0).padStart(6)} req/s ${a.cpuMicros.toFixed(0).padStart(4)} µs CPU   ${that7} ${b.rps.toFixed(0).padStart(6)} req/s ${b.cpuMicros.toFixed(0).padStart(4)} µs CPU   ratio ${(a.rps / b.rps).toFixed(3)}`);
      }
    }
    for (const c of CASES) {
      const [throughput, cpu] = [median(ratios[c]!), median(cpuRatios[c]!)];
      console.log(`median ${c}: throughput ${throughput.toFixed(3)} (cost ${((1 - throughput) * 100).toFixed(1)}%), CPU per request ${cpu.toFixed(3)} (cost ${((cpu - 1) * 100).toFixed(1)}%)`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
