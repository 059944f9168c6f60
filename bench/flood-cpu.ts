/**
 * What an open-loop flood costs the server, in CPU seconds: Coffer with all its workers, 1,000 requests a
 * second over 200 connections for 5 s (answers held back up to a second more), and the serving processes'
 * user + system time from /proc before and after. No reads run beside it, so nothing else is counted.
 * `good-read` sends correct reads the same way, for what any request costs at that rate and spread.
 *
 *   node dist/bench/flood-cpu.js [wrong-secret|unknown-id|good-read]     (after npm run build)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import { processCpu } from './cpu-accounting.js';
import { describeMachine } from './machine.js';
import { goodRequest, openLoop, wrongSecretRequest } from './open-loop.js';
import { startCoffer } from './servers.js';

/** utime + stime of `pids`, in seconds. */
function cpuSeconds(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + processCpu(pid), 0);
}

const kind = process.argv[2] ?? 'wrong-secret';
if (kind !== 'wrong-secret' && kind !== 'unknown-id' && kind !== 'good-read') {
  console.error('usage: flood-cpu.js [wrong-secret|unknown-id|good-read]');
  process.exit(2);
}
const root = generateToken().value;
const dir = mkdtempSync(join(tmpdir(), 'coffer-flood-cpu-'));
const server = await startCoffer({
  dataDir: dir,
  rootToken: root,
  workers: availableParallelism(),
  core: null,
});
try {
  await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', {
    value: 'p'.repeat(64),
    type: 'secret',
  });
  const reader = await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' });
  const tokenId = kind === 'unknown-id' ? 'UnknownIdBench00' : String(reader.id);
  const request =
    kind === 'good-read'
      ? goodRequest('/v1/kv/bench/app/secret', String(reader.token))
      : wrongSecretRequest('/v1/kv/bench/app/secret', tokenId);
  const pids = server.servingPids();
  const before = cpuSeconds(pids);
  const result = await openLoop({
    url: server.url,
    perSecond: 1000,
    connections: 200,
    seconds: 5,
    request,
  });
  const used = cpuSeconds(pids) - before;
  console.log(
    `${describeMachine()} — ${kind} flood: ${result.sent} sent, answered ${JSON.stringify(result.byStatus)}; ` +
      `server CPU ${used.toFixed(2)} s (${((used / result.answered) * 1000).toFixed(3)} ms per answer)`,
  );
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
