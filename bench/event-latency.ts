/**
 * Write → event latency (issue #41: p99 ≤ 100 ms at 1,000 writes/s): a server (its workers, on the
 * machine's cores) takes durable writes sent open loop at `--rate` a second for `--seconds`, each to a new
 * key, while one client follows the change stream (GET /v1/events, the TS client's events()). For each
 * write, the time from sending it to its event arriving; reported: how many writes were acknowledged, how
 * many events arrived, and the latency's p50, p99 and maximum.
 *
 * With --storage postgres, two servers share one PostgreSQL database (a schema of their own, dropped at
 * the end): the writes go to one, the stream is on the other, so each event crosses servers (NOTIFY).
 *
 *   npm run build && node dist/bench/event-latency.js [--rate 1000] [--seconds 10] [--workers 2] [--storage postgres]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { Coffer } from '../src/client/index.js';
import { describeMachine } from './machine.js';
import { startCoffer } from './servers.js';
import { benchPgUrl, benchSchema, dropBenchSchemas } from './storage.js';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    workers: { type: 'string', default: '2' },
    storage: { type: 'string', default: 'lmdb' },
  },
});
const onPostgres = args.storage === 'postgres';
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

const root = generateToken().value;
const dir = mkdtempSync(join(tmpdir(), 'coffer-event-latency-'));
const pgUrl = benchPgUrl();
const schema = benchSchema();
const pg = onPostgres
  ? { COFFER_STORAGE: 'postgres', COFFER_PG_URL: pgUrl, COFFER_PG_SCHEMA: schema }
  : undefined;
const server = await startCoffer({
  dataDir: dir,
  rootToken: root,
  workers: Number(args.workers),
  core: null,
  ...(pg ? { env: pg } : {}),
});
/** Where the writes go: the same server, or on PostgreSQL another one sharing the database. */
const writer = pg
  ? await startCoffer({
      dataDir: mkdtempSync(join(tmpdir(), 'coffer-event-latency-b-')),
      rootToken: root,
      workers: Number(args.workers),
      core: null,
      env: { ...pg, COFFER_MASTER_KEY_FILE: join(dir, 'master.key') },
    })
  : server;
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const url = new URL(writer.url);
try {
  const coffer = new Coffer({ url: server.url, token: root });
  const sentAt = new Map<string, number>();
  const ackedAt = new Map<string, number>();
  const latencies: number[] = [];
  /** From a write's acknowledgement to its event (negative: the event came first). */
  const afterAck: number[] = [];
  const writeLatencies: number[] = [];
  const stop = new AbortController();
  const following = (async () => {
    for await (const event of coffer.events({ namespaces: ['latency'], signal: stop.signal })) {
      if (event.kind !== 'kv') continue;
      const at = sentAt.get(event.key);
      if (at !== undefined) latencies.push(performance.now() - at);
      const acked = ackedAt.get(event.key);
      if (acked !== undefined) afterAck.push(performance.now() - acked);
    }
  })();
  // The stream is open before the first write (a write before it would not be heard).
  await sleep(1000);

  let acknowledged = 0;
  let refused = 0;
  const pending = new Set<Promise<void>>();
  const write = (key: string): Promise<void> =>
    new Promise((resolve) => {
      const body = JSON.stringify({ value: 'x'.repeat(64), type: 'secret' });
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method: 'PUT',
          path: `/v1/kv/latency/${key}`,
          agent,
          headers: {
            authorization: `Bearer ${root}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 201 || res.statusCode === 200) {
              acknowledged++;
              ackedAt.set(key, performance.now());
              writeLatencies.push(performance.now() - sentAt.get(key)!);
            } else refused++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        refused++;
        resolve();
      });
      req.end(body);
    });

  const total = rate * seconds;
  const started = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
    for (; sent < due; sent++) {
      const key = `k${sent}`;
      sentAt.set(key, performance.now());
      const done = write(key);
      pending.add(done);
      void done.then(() => pending.delete(done));
    }
    await sleep(1);
  }
  const sending = (performance.now() - started) / 1000;
  await Promise.all(pending);
  await sleep(2000);
  stop.abort();
  await following;

  const sorted = latencies.slice().sort((a, b) => a - b);
  console.log(
    `write → event latency — ${describeMachine()}; ${args.workers} worker(s)${onPostgres ? ' on each of two servers sharing one PostgreSQL database, written on one, followed on the other' : ''}, open loop`,
  );
  console.log(
    `writes sent ${sent} in ${sending.toFixed(1)} s (${(sent / sending).toFixed(0)}/s), acknowledged ${acknowledged}, refused ${refused}; events received ${latencies.length}`,
  );
  console.log(
    `latency from sending a write to its event: p50 ${percentile(sorted, 0.5).toFixed(1)} ms, p99 ${percentile(sorted, 0.99).toFixed(1)} ms, max ${(sorted.at(-1) ?? Number.NaN).toFixed(1)} ms`,
  );
  const writes = writeLatencies.slice().sort((a, b) => a - b);
  const acks = afterAck.slice().sort((a, b) => a - b);
  console.log(
    `of which the write itself (sent → acknowledged): p50 ${percentile(writes, 0.5).toFixed(1)} ms, p99 ${percentile(writes, 0.99).toFixed(1)} ms; acknowledged → event (${acks.length} events after their answer): p50 ${percentile(acks, 0.5).toFixed(1)} ms, p99 ${percentile(acks, 0.99).toFixed(1)} ms`,
  );
  const p99 = percentile(sorted, 0.99);
  console.log(`target: p99 ≤ 100 ms at ${rate} writes/s — ${p99 <= 100 ? 'met' : 'MISSED'}`);
} finally {
  agent.destroy();
  if (writer !== server) await writer.stop();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  if (onPostgres) await dropBenchSchemas(pgUrl, [schema]);
}
