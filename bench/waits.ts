/**
 * What held waits cost the reads beside them: Coffer as one process with its audit log, pinned to core 0,
 * wrk (core 1) reading a secret, with and without 500 requests held waiting for another key to change
 * (GET …?wait_after=N&timeout=300s, each sent again if it comes back 304). Alternated for `rounds` rounds;
 * the target is on the median of the per-round ratios (reads with the waits / reads without).
 *
 *   npm run bench -- --only waits [--seconds 10] [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from './api.js';
import * as shape from './cases.js';
import { median, type Target, target } from './report.js';
import { startDirectCoffer } from './servers.js';
import { runWrk } from './wrk.js';

export const HELD_WAITS = 500;
const VALUE = 'p'.repeat(64);

export interface WaitsRound {
  readonly control: number;
  readonly withWaits: number;
  /** Waits held when the measurement ended (should be all of them). */
  readonly held: number;
}

/** Holds `count` waits on `path` until stopped; each 304 is sent again at once. */
function holdWaits(url: string, path: string, token: string, count: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: count });
  let stopped = false;
  let held = 0;
  const one = (): void => {
    if (stopped) return;
    held++;
    const req = request(
      `${url}${path}`,
      { agent, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        res.on('end', () => {
          held--;
          if (res.statusCode !== 304 && !stopped)
            throw new Error(`a held wait was answered ${res.statusCode}, not 304`);
          one();
        });
      },
    );
    req.on('error', () => {
      held--;
    });
    req.end();
  };
  for (let i = 0; i < count; i++) one();
  return {
    held: () => held,
    stop: () => {
      stopped = true;
      agent.destroy();
    },
  };
}

export async function waitsCost(
  root: string,
  options: { seconds: number; rounds: number; connections: number },
): Promise<{ rounds: WaitsRound[]; target: Target }> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, true);
  const rounds: WaitsRound[] = [];
  try {
    await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
    await api(server.url, root, 'PUT', '/v1/kv/bench/app/watched', {
      value: VALUE,
      type: 'secret',
    });
    const reader = String(
      (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const lua = shape.get('/v1/kv/bench/app/secret', reader);
    const load = { url: server.url, lua, connections: options.connections };
    const reads = async (): Promise<number> => {
      await runWrk({ ...load, seconds: 1 });
      const result = await runWrk({ ...load, seconds: options.seconds });
      if (result.failedStatus > 0 || result.errors > 0)
        throw new Error(`${result.failedStatus} failed reads, ${result.errors} errors`);
      return result.requestsPerSecond;
    };
    for (let round = 1; round <= options.rounds; round++) {
      let control = 0;
      let withWaits = 0;
      let held = 0;
      for (const form of round % 2 === 1 ? ['control', 'waits'] : ['waits', 'control']) {
        if (form === 'control') {
          control = await reads();
          continue;
        }
        const waits = holdWaits(
          server.url,
          '/v1/kv/bench/app/watched?wait_after=1&timeout=300s',
          reader,
          HELD_WAITS,
        );
        await new Promise((resolve) => setTimeout(resolve, 1000));
        withWaits = await reads();
        held = waits.held();
        waits.stop();
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      rounds.push({ control, withWaits, held });
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    rounds,
    target: target(
      `secret reads with ${HELD_WAITS} held waits / without`,
      median(rounds.map((r) => r.withWaits / r.control)),
      '≥',
      0.9,
    ),
  };
}

export function printWaits(rounds: readonly WaitsRound[]): void {
  console.log(`\nsecret reads beside ${HELD_WAITS} held waits, one process on core 0\n`);
  console.log(
    `${'round'.padEnd(6)} ${'reads/s alone'.padStart(14)} ${'reads/s, waits'.padStart(15)} ${'ratio'.padStart(6)} ${'held'.padStart(5)}`,
  );
  for (const [i, r] of rounds.entries())
    console.log(
      `${String(i + 1).padEnd(6)} ${r.control.toFixed(0).padStart(14)} ${r.withWaits.toFixed(0).padStart(15)} ${(r.withWaits / r.control).toFixed(3).padStart(6)} ${String(r.held).padStart(5)}`,
    );
}
