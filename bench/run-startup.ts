/**
 * `coffer run`'s own start-up: `coffer run --ns bench/app -- node -e 0` (reading the namespace's 10 values in
 * one call from Coffer as one process on core 0, then starting node) beside `node -e 0` alone, alternated
 * `runs` times; wall time of each whole command, medians, and coffer run's overhead in milliseconds.
 *
 *   npm run bench -- --only run-startup [--rounds 5]    (runs = 4 × rounds)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from './api.js';
import { median } from './report.js';
import { COFFER_MAIN, startDirectCoffer } from './servers.js';

export interface RunStartup {
  readonly runs: number;
  readonly nodeMs: number;
  readonly cofferRunMs: number;
}

function wallMs(command: string, args: string[], env: NodeJS.ProcessEnv): number {
  const started = performance.now();
  const result = spawnSync(command, args, { env, stdio: 'ignore' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}`);
  return performance.now() - started;
}

export async function runStartup(root: string, runs: number): Promise<RunStartup> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, true);
  try {
    for (let i = 0; i < 10; i++)
      await api(server.url, root, 'PUT', `/v1/kv/bench/app/key_${i}`, {
        value: 'v'.repeat(64),
        type: 'secret',
      });
    const reader = String(
      (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const env = { ...process.env, COFFER_ADDR: server.url, COFFER_TOKEN: reader };
    const node = (): number => wallMs(process.execPath, ['-e', '0'], env);
    const coffer = (): number =>
      wallMs(
        process.execPath,
        [COFFER_MAIN, 'run', '--ns', 'bench/app', '--', process.execPath, '-e', '0'],
        env,
      );
    node();
    coffer(); // warm-up: the page cache
    const nodeMs: number[] = [];
    const cofferMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        nodeMs.push(node());
        cofferMs.push(coffer());
      } else {
        cofferMs.push(coffer());
        nodeMs.push(node());
      }
    }
    return { runs, nodeMs: median(nodeMs), cofferRunMs: median(cofferMs) };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printRunStartup(r: RunStartup): void {
  console.log(`\ncoffer run start-up, ${r.runs} runs each, alternated (median wall time)\n`);
  console.log(`node -e 0                                   ${r.nodeMs.toFixed(1).padStart(7)} ms`);
  console.log(
    `coffer run --ns bench/app -- node -e 0      ${r.cofferRunMs.toFixed(1).padStart(7)} ms`,
  );
  console.log(
    `coffer run's own share                      ${(r.cofferRunMs - r.nodeMs).toFixed(1).padStart(7)} ms (${(r.cofferRunMs / r.nodeMs).toFixed(2)} × node -e 0)`,
  );
}
