/**
 * A namespace's 100 values in one call (GET /v1/kv/{ns}/?values=true) against the same 100 values read one
 * request each: Coffer as one process with its audit log, pinned to core 0, wrk on core 1; for each form the
 * process's user + system seconds from /proc divided by the values it answered. Alternated for `rounds`
 * rounds (the machine's drift hits both alike); the target is on the median of the per-round ratios.
 *
 *   npm run bench -- --only namespace-read [--seconds 10] [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from './api.js';
import * as shape from './cases.js';
import { processCpu } from './cpu-accounting.js';
import { median, type Target, target } from './report.js';
import { startDirectCoffer } from './servers.js';
import { runWrk } from './wrk.js';

export const NAMESPACE_KEYS = 100;
const VALUE = 'p'.repeat(64);

export interface NamespaceReadRound {
  readonly singleUsPerValue: number;
  readonly namespaceUsPerValue: number;
  readonly singleValuesPerSecond: number;
  readonly namespaceValuesPerSecond: number;
}

/** CPU µs per value of the load `lua`, whose every request answers `perRequest` values. */
export async function cpuPerValue(
  url: string,
  pid: number,
  lua: string,
  perRequest: number,
  options: { seconds: number; connections: number },
): Promise<{ usPerValue: number; valuesPerSecond: number }> {
  await runWrk({ url, lua, connections: options.connections, seconds: 1 }); // warm-up
  const before = processCpu(pid);
  const result = await runWrk({ url, lua, ...options });
  if (result.failedStatus > 0 || result.errors > 0)
    throw new Error(`${result.failedStatus} failed answers, ${result.errors} errors`);
  const values = result.requests * perRequest;
  return {
    usPerValue: ((processCpu(pid) - before) / values) * 1e6,
    valuesPerSecond: result.requestsPerSecond * perRequest,
  };
}

export async function namespaceReadCost(
  root: string,
  options: { seconds: number; rounds: number; connections: number },
): Promise<{ rounds: NamespaceReadRound[]; target: Target }> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, true);
  const rounds: NamespaceReadRound[] = [];
  try {
    for (let i = 0; i < NAMESPACE_KEYS; i++)
      await api(server.url, root, 'PUT', `/v1/kv/bench/ns/k${i}`, { value: VALUE, type: 'secret' });
    const reader = String(
      (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const pid = server.servingPids()[0]!;
    const load = { seconds: options.seconds, connections: options.connections };
    const single = shape.cycleKeys('/v1/kv/bench/ns/k', NAMESPACE_KEYS, reader);
    const whole = shape.get('/v1/kv/bench/ns/?values=true', reader);
    for (let round = 1; round <= options.rounds; round++) {
      const measured: Record<string, { usPerValue: number; valuesPerSecond: number }> = {};
      for (const form of round % 2 === 1 ? ['single', 'namespace'] : ['namespace', 'single'])
        measured[form] =
          form === 'single'
            ? await cpuPerValue(server.url, pid, single, 1, load)
            : await cpuPerValue(server.url, pid, whole, NAMESPACE_KEYS, load);
      rounds.push({
        singleUsPerValue: measured.single!.usPerValue,
        namespaceUsPerValue: measured.namespace!.usPerValue,
        singleValuesPerSecond: measured.single!.valuesPerSecond,
        namespaceValuesPerSecond: measured.namespace!.valuesPerSecond,
      });
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    rounds,
    target: target(
      `server CPU per value: ${NAMESPACE_KEYS} single reads / one ${NAMESPACE_KEYS}-value call`,
      median(rounds.map((r) => r.singleUsPerValue / r.namespaceUsPerValue)),
      '≥',
      5,
    ),
  };
}

export function printNamespaceRead(rounds: readonly NamespaceReadRound[]): void {
  console.log(
    `\n${NAMESPACE_KEYS} secret values: one call (?values=true) against single reads, one process on core 0\n`,
  );
  console.log(
    `${'round'.padEnd(6)} ${'single µs/value'.padStart(16)} ${'call µs/value'.padStart(14)} ${'ratio'.padStart(6)} ${'single values/s'.padStart(16)} ${'call values/s'.padStart(14)}`,
  );
  for (const [i, r] of rounds.entries())
    console.log(
      `${String(i + 1).padEnd(6)} ${r.singleUsPerValue.toFixed(1).padStart(16)} ${r.namespaceUsPerValue.toFixed(1).padStart(14)} ${(r.singleUsPerValue / r.namespaceUsPerValue).toFixed(1).padStart(6)} ${r.singleValuesPerSecond.toFixed(0).padStart(16)} ${r.namespaceValuesPerSecond.toFixed(0).padStart(14)}`,
    );
}
