/**
 * What one request costs the server in CPU, with and without the audit log: Coffer as one plain process
 * pinned to core 0 (bench/direct-server.ts), wrk on core 1 for `--seconds`, and the process's user + system
 * time from /proc divided by the requests answered. Alternates audit on and off for `--rounds` rounds.
 * CPU per request moves less with the machine's drift than requests per second do, so this is where a
 * change to the per-request work shows.
 *
 *   npm run build && node dist/bench/cpu-per-request.js [write|read] [--seconds 6] [--rounds 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { processCpu } from './cpu-accounting.js';
import { describeMachine } from './machine.js';
import { startDirectCoffer } from './servers.js';
import { ensureTools, runWrk } from './wrk.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { seconds: { type: 'string', default: '6' }, rounds: { type: 'string', default: '3' } },
});
const kind = positionals[0] ?? 'write';
if (kind !== 'write' && kind !== 'read') {
  console.error('usage: cpu-per-request.js [write|read] [--seconds 6] [--rounds 3]');
  process.exit(2);
}
const VALUE = 'p'.repeat(64);

ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
console.log(`${kind}s, one process on core 0 — ${describeMachine()}`);
for (let round = 1; round <= Number(args.rounds); round++) {
  const line: string[] = [];
  for (const audit of round % 2 === 1 ? [true, false] : [false, true]) {
    const dir = mkdtempSync(join(tmpdir(), 'coffer-cpu-'));
    const root = generateToken().value;
    const server = await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, audit);
    try {
      await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', {
        value: VALUE,
        type: 'secret',
      });
      const role = kind === 'write' ? 'writer' : 'reader';
      const token = String((await api(server.url, root, 'POST', '/v1/auth/token', { role })).token);
      const lua =
        kind === 'write'
          ? shape.putNew('/v1/kv/bench/writes/k', token, { value: VALUE, type: 'secret' })
          : shape.get('/v1/kv/bench/app/secret', token);
      await runWrk({ url: server.url, lua, connections: 32, seconds: 1 });
      const pid = server.servingPids()[0]!;
      const before = processCpu(pid);
      const result = await runWrk({
        url: server.url,
        lua,
        connections: 32,
        seconds: Number(args.seconds),
      });
      const perRequest = (processCpu(pid) - before) / result.requests;
      line.push(
        `audit ${audit ? 'on ' : 'off'} ${result.requestsPerSecond.toFixed(0).padStart(6)}/s ${(perRequest * 1e6).toFixed(0).padStart(4)} µs CPU each`,
      );
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(`round ${round}: ${line.join('   ')}`);
}
