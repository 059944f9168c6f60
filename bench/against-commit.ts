/**
 * What a change costs against the commit before it: that commit is built from the git history
 * (bench/git-build.ts) and its one-process server (bench/direct-server.ts, audit log on) is measured against
 * this build's, both pinned to core 0 with wrk on core 1, alternating A B / B A over the rounds. Per round
 * the ratio this / that of the secret read and of the durable write, and the median over the rounds.
 *
 *   npm run build && node dist/bench/against-commit.js [--commit <sha>] [--rounds 3] [--seconds 10]
 *
 * The default commit is the last one before the storage barrier (issue #12: it may cost at most 5%).
 */
import { mkdtempSync, rmSync } from 'node:fs';
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

async function measureBuild(script: string | undefined, root: string): Promise<Record<(typeof CASES)[number], number>> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0, ...(script ? { script } : {}) }, true);
  try {
    await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
    const reader = String((await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token);
    const writer = String((await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token);
    const run = async (lua: string): Promise<number> => {
      await runWrk({ url: server.url, lua, connections: 32, seconds: 1, core: 1 });
      return (await runWrk({ url: server.url, lua, connections: 32, seconds, core: 1 })).requestsPerSecond;
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
    console.log(`this build against ${commit.slice(0, 7)} — ${describeMachine()}; one process on core 0, wrk (32 connections, ${seconds} s) on core 1`);
    for (let round = 1; round <= rounds; round++) {
      const order: Build[] = round % 2 === 1 ? ['this', 'that'] : ['that', 'this'];
      const got: Partial<Record<Build, Record<string, number>>> = {};
      for (const build of order) got[build] = await measureBuild(build === 'this' ? undefined : that, root);
      for (const c of CASES) {
        const ratio = got.this![c]! / got.that![c]!;
        ratios[c]!.push(ratio);
        console.log(`round ${round}  ${c.padEnd(24)} this ${got.this![c]!.toFixed(0).padStart(6)} req/s   ${commit.slice(0, 7)} ${got.that![c]!.toFixed(0).padStart(6)} req/s   ratio ${ratio.toFixed(3)}`);
      }
    }
    for (const c of CASES) console.log(`median ${c}: ${median(ratios[c]!).toFixed(3)} (cost ${((1 - median(ratios[c]!)) * 100).toFixed(1)}%)`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
