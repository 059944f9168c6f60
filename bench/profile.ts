/**
 * Where one Coffer process spends its time on one kind of request: the process (one plain process with its
 * audit log, pinned to core 0) runs under `node --cpu-prof` while wrk (core 1) sends one case for
 * `--seconds`; the profile is summarized by bench/profile-summary.ts (top frames by self time, and self time
 * by area). `supervised` instead measures what the supervisor costs: one worker under it against the plain
 * process, both pinned to core 0, alternated over three rounds, no profiler.
 *
 *   npm run build && node dist/bench/profile.js read|write|mix|namespace-read|token-create|unknown-id-flood|supervised [--seconds 10] [--top 15] [--no-audit] [--storage postgres] [--under <regexp>]… [--keep <file>]
 *
 * `--under` adds the share of time spent under (callees included) frames matching each pattern; `--keep`
 * copies the .cpuprofile there (to open in Chrome's DevTools, or summarize again).
 *
 * `unknown-id-flood` sends tokens of an unknown id open loop (1,000 a second over 200 connections) instead of wrk.
 *
 * `--no-audit` profiles the process without its audit log (bench/direct-server.ts), for the audit's share.
 * `--stream` ships its audit log to one audit stream (syslog over TCP) whose receiver (bench/stream-sink.ts)
 * runs with wrk on core 1, for what a stream costs the server (issue #37).
 * `--storage postgres` runs the process on PostgreSQL (COFFER_PG_URL, by default the local test server), in a
 * schema of its own, dropped at the end.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { describeMachine } from './machine.js';
import { NAMESPACE_KEYS } from './namespace-read.js';
import { openLoop, wrongSecretRequest } from './open-loop.js';
import { type RunningServer, startCoffer, startDirectCoffer } from './servers.js';
import { benchPgUrl, benchSchema, dropBenchSchemas } from './storage.js';
import { startStreamSink } from './stream-sink.js';
import { ensureTools, runWrk } from './wrk.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '15' },
    connections: { type: 'string', default: '32' },
    'no-audit': { type: 'boolean', default: false },
    stream: { type: 'boolean', default: false },
    storage: { type: 'string', default: 'lmdb' },
    under: { type: 'string', multiple: true, default: [] },
    keep: { type: 'string' },
  },
});
const kind = positionals[0];
const seconds = Number(args.seconds);
const connections = Number(args.connections);
const VALUE = 'p'.repeat(64);
const SUMMARY = fileURLToPath(new URL('profile-summary.js', import.meta.url));

interface Seeded {
  readonly reader: string;
  readonly writer: string;
}

async function seed(server: RunningServer, root: string): Promise<Seeded> {
  await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', { value: VALUE, type: 'secret' });
  if (kind === 'namespace-read')
    for (let i = 0; i < NAMESPACE_KEYS; i++)
      await api(server.url, root, 'PUT', `/v1/kv/bench/ns/k${i}`, { value: VALUE, type: 'secret' });
  const reader = await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' });
  const writer = await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' });
  return { reader: String(reader.token), writer: String(writer.token) };
}

function caseFor(name: string, t: Seeded, root: string): string {
  switch (name) {
    case 'read':
      return shape.get('/v1/kv/bench/app/secret', t.reader);
    case 'write':
      return shape.putNew('/v1/kv/bench/writes/k', t.writer, { value: VALUE, type: 'secret' });
    case 'mix':
      return shape.readWriteMix('/v1/kv/bench/app/secret', '/v1/kv/bench/mix/k', t.writer, {
        value: VALUE,
        type: 'secret',
      });
    case 'namespace-read':
      return shape.get('/v1/kv/bench/ns/?values=true', t.reader);
    case 'token-create':
      return shape.post('/v1/auth/token', root, { role: 'reader', expires_in: 600 });
    default:
      throw new Error(
        `unknown case ${name}: read, write, mix, namespace-read, token-create or supervised`,
      );
  }
}

async function profile(name: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-profile-'));
  const profiles = join(dir, 'profiles');
  const root = generateToken().value;
  const sink = args.stream ? await startStreamSink(1) : undefined;
  const schema = args.storage === 'postgres' ? benchSchema() : undefined;
  const server = await startDirectCoffer(
    {
      dataDir: dir,
      rootToken: root,
      core: 0,
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profiles}`],
      env: {
        ...(sink ? { COFFER_AUDIT_STREAMS: `syslog+tcp://127.0.0.1:${sink.port}` } : {}),
        ...(schema
          ? { COFFER_STORAGE: 'postgres', COFFER_PG_URL: benchPgUrl(), COFFER_PG_SCHEMA: schema }
          : {}),
      },
    },
    !args['no-audit'],
  );
  try {
    if (name === 'unknown-id-flood') {
      // Open loop, no reads beside it: what a request arriving on its own costs, answered 401.
      await seed(server, root);
      const sent = await openLoop({
        url: server.url,
        perSecond: 1000,
        connections: 200,
        seconds,
        request: wrongSecretRequest('/v1/kv/bench/app/secret', 'UnknownIdBench00'),
      });
      console.log(
        `${name}: ${sent.sent} sent at 1,000/s over 200 connections, answered ${JSON.stringify(sent.byStatus)} — ${describeMachine()}`,
      );
    } else {
      const lua = caseFor(name, await seed(server, root), root);
      await runWrk({ url: server.url, lua, connections, seconds: 1 });
      const result = await runWrk({ url: server.url, lua, connections, seconds });
      console.log(
        `${name}${args['no-audit'] ? ' (no audit log)' : ''}${args.stream ? ' (one audit stream)' : ''}: ${result.requestsPerSecond.toFixed(0)} req/s under the profiler, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms — ${describeMachine()}`,
      );
    }
  } finally {
    await server.stop(); // the profile is written as the process exits
    sink?.stop();
    if (schema) await dropBenchSchemas(benchPgUrl(), [schema]);
  }
  const [file] = readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('the server wrote no profile');
  console.log(
    execFileSync(process.execPath, [
      SUMMARY,
      join(profiles, file),
      String(args.top),
      ...(args.under ?? []),
    ]).toString(),
  );
  if (args.keep) copyFileSync(join(profiles, file), args.keep);
  rmSync(dir, { recursive: true, force: true });
}

async function supervised(): Promise<void> {
  const root = generateToken().value;
  for (let round = 1; round <= 3; round++) {
    const order = round % 2 === 1 ? ['supervised', 'plain'] : ['plain', 'supervised'];
    const line: string[] = [];
    for (const how of order) {
      const dir = mkdtempSync(join(tmpdir(), 'coffer-profile-'));
      const server =
        how === 'plain'
          ? await startDirectCoffer({ dataDir: dir, rootToken: root, core: 0 }, true)
          : await startCoffer({ dataDir: dir, rootToken: root, workers: 1, core: 0 });
      try {
        const lua = caseFor('read', await seed(server, root), root);
        await runWrk({ url: server.url, lua, connections, seconds: 1 });
        const result = await runWrk({ url: server.url, lua, connections, seconds });
        line.push(
          `${how} ${result.requestsPerSecond.toFixed(0)} req/s (p99 ${result.p99Ms.toFixed(2)} ms)`,
        );
      } finally {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    console.log(`round ${round}: ${line.join(', ')}`);
  }
  console.log(describeMachine());
}

ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
(kind === 'supervised' ? supervised() : profile(kind ?? '')).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
