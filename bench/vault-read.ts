/**
 * A read through Vault's dialect (GET /vault/v1/secret/data/{ns}/{key}) against the native read of the same
 * value (GET /v1/kv/{ns}/{key}): Coffer as one process with its audit log, pinned to core 0, wrk on core 1;
 * for each form the process's user + system seconds from /proc divided by the reads it answered, and its
 * throughput. Alternated for `rounds` rounds (the machine's drift hits both alike); the target (issue #40)
 * is on the median of the per-round ratios.
 *
 *   npm run bench -- --only vault-read [--seconds 10] [--rounds 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from './api.js';
import * as shape from './cases.js';
import { cpuPerValue } from './namespace-read.js';
import { median, type Target, target } from './report.js';
import { startDirectCoffer } from './servers.js';

/** A secret as Vault's clients keep one: a small JSON object. */
const SECRET = { username: 'payments', password: 'p'.repeat(32), host: 'db.internal' };

export interface VaultReadRound {
  readonly nativeUsPerRead: number;
  readonly vaultUsPerRead: number;
  readonly nativeReadsPerSecond: number;
  readonly vaultReadsPerSecond: number;
}

export async function vaultReadCost(
  root: string,
  options: { seconds: number; rounds: number; connections: number },
): Promise<{ rounds: VaultReadRound[]; target: Target }> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, true);
  const rounds: VaultReadRound[] = [];
  try {
    await api(server.url, root, 'PUT', '/v1/kv/bench/app/db', {
      value: JSON.stringify(SECRET),
      type: 'secret',
    });
    const reader = String(
      (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
    );
    const pid = server.servingPids()[0]!;
    const load = { seconds: options.seconds, connections: options.connections };
    const native = shape.get('/v1/kv/bench/app/db', reader);
    const vault = shape.get('/vault/v1/secret/data/bench/app/db', reader);
    for (let round = 1; round <= options.rounds; round++) {
      const got: Record<string, { usPerValue: number; valuesPerSecond: number }> = {};
      for (const form of round % 2 === 1 ? ['native', 'vault'] : ['vault', 'native'])
        got[form] = await cpuPerValue(server.url, pid, form === 'native' ? native : vault, 1, load);
      rounds.push({
        nativeUsPerRead: got.native!.usPerValue,
        vaultUsPerRead: got.vault!.usPerValue,
        nativeReadsPerSecond: got.native!.valuesPerSecond,
        vaultReadsPerSecond: got.vault!.valuesPerSecond,
      });
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    rounds,
    target: target(
      "server CPU per read: through Vault's dialect / native, the same value",
      median(rounds.map((r) => r.vaultUsPerRead / r.nativeUsPerRead)),
      '≤',
      1.15,
    ),
  };
}

export function printVaultRead(rounds: readonly VaultReadRound[]): void {
  console.log(
    "\nThe same secret read natively and through Vault's dialect, one process on core 0\n",
  );
  console.log(
    `${'round'.padEnd(6)} ${'native µs/read'.padStart(15)} ${'vault µs/read'.padStart(14)} ${'ratio'.padStart(6)} ${'native reads/s'.padStart(15)} ${'vault reads/s'.padStart(14)}`,
  );
  for (const [i, r] of rounds.entries())
    console.log(
      `${String(i + 1).padEnd(6)} ${r.nativeUsPerRead.toFixed(1).padStart(15)} ${r.vaultUsPerRead.toFixed(1).padStart(14)} ${(r.vaultUsPerRead / r.nativeUsPerRead).toFixed(3).padStart(6)} ${r.nativeReadsPerSecond.toFixed(0).padStart(15)} ${r.vaultReadsPerSecond.toFixed(0).padStart(14)}`,
    );
}
