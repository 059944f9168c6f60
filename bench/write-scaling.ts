/**
 * Whether durable writes grow with workers (issue #42, target 3): Coffer with 1 worker, with 2, and with
 * all of the machine's (`--workers N` to name another count), each on a fresh data directory with its
 * audit log, none pinned; wrk (core 1) writes a new key per request to each in turn, the order turned
 * round every round so that the machine's drift falls on all alike. Reported: each server's durable
 * writes a second and p99 per round, and the median of each count's ratio to one worker's in the same
 * round; the target is 2 workers ≥ 1.5× one.
 *
 *   npm run bench -- --only write-scaling [--workers N] [--seconds 10] [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from './api.js';
import * as shape from './cases.js';
import { median, type Target, target } from './report.js';
import { type RunningServer, startCoffer } from './servers.js';
import { runWrk } from './wrk.js';

const VALUE = 'p'.repeat(64);

export interface WriteScalingRound {
  /** Per worker count: durable writes a second, and the p99 in ms. */
  readonly byWorkers: Readonly<Record<number, { readonly rps: number; readonly p99Ms: number }>>;
}

export async function writeScaling(
  root: string,
  options: { seconds: number; rounds: number; connections: number; workers: number },
): Promise<{ rounds: WriteScalingRound[]; targets: Target[] }> {
  const counts = [...new Set([1, 2, options.workers])].sort((a, b) => a - b);
  /** What was made, taken down at the end whatever fails: each count's data directory and server. */
  const dirs: string[] = [];
  const running: RunningServer[] = [];
  const servers = new Map<number, { url: string; lua: string }>();
  const rounds: WriteScalingRound[] = [];
  try {
    for (const workers of counts) {
      const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
      dirs.push(dir);
      const server = await startCoffer({ dataDir: dir, rootToken: root, workers, core: null });
      running.push(server);
      const writer = String(
        (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token,
      );
      servers.set(workers, {
        url: server.url,
        lua: shape.putNew('/v1/kv/bench/writes/k', writer, { value: VALUE, type: 'secret' }),
      });
    }
    const load = (workers: number, seconds: number) => {
      const { url, lua } = servers.get(workers)!;
      return runWrk({ url, lua, connections: options.connections, seconds, core: 1 });
    };
    for (const workers of counts) await load(workers, 1); // warm-up: JIT, caches
    console.log(
      `durable writes with ${counts.join(', ')} workers (wrk on core 1, ${options.connections} connections, ${options.seconds}-s slices, the order turned round each round)`,
    );
    for (let round = 1; round <= options.rounds; round++) {
      const order = round % 2 === 1 ? counts : [...counts].reverse();
      const byWorkers: Record<number, { rps: number; p99Ms: number }> = {};
      for (const workers of order) {
        const result = await load(workers, options.seconds);
        byWorkers[workers] = { rps: result.requestsPerSecond, p99Ms: result.p99Ms };
      }
      rounds.push({ byWorkers });
      console.log(
        `round ${round}  ${counts.map((w) => `${w} × ${byWorkers[w]!.rps.toFixed(0)} writes/s (p99 ${byWorkers[w]!.p99Ms.toFixed(1)} ms)`).join('   ')}`,
      );
    }
  } finally {
    for (const server of running) await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  const ratio = (workers: number) =>
    median(rounds.map((r) => r.byWorkers[workers]!.rps / r.byWorkers[1]!.rps));
  for (const workers of counts.slice(1))
    console.log(`median: ${workers} workers write ${ratio(workers).toFixed(3)}× one worker`);
  return {
    rounds,
    targets: [target('durable writes, 2 workers / 1 worker', ratio(2), '≥', 1.5)],
  };
}
