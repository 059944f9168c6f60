/**
 * What one audit stream costs its process per audit line, in CPU, without a server around it: lines shaped
 * like a secret read's are offered to a syslog-over-TCP stream (the same AuditStream and transport the
 * server uses) in the writer's small batches at a steady rate, alternated with the same load not offered
 * to any stream, in slices of a few seconds. The receiver (bench/stream-sink.ts) runs on core 1; pin this
 * process to core 0 for a steady figure. Reports the CPU a line costs with and without the stream (user
 * and system, from process.cpuUsage) and the difference: the stream's own cost, which a read through the
 * server pays once (issue #37: reads at most 3% slower with one stream).
 *
 *   npm run build && taskset -c 0 node dist/bench/stream-line-cost.js [--rounds 5] [--seconds 3] [--rate 9000] [--batch 3]
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { AuditStream } from '../src/audit/streams/audit-stream.js';
import { parseStreams } from '../src/audit/streams/stream-spec.js';
import { transportFor } from '../src/audit/streams/transports.js';
import { describeMachine } from './machine.js';
import { median } from './report.js';
import { startStreamSink } from './stream-sink.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    /** Lines a second. */
    rate: { type: 'string', default: '9000' },
    /** Lines in one of the writer's batches (a read's batch holds a few). */
    batch: { type: 'string', default: '3' },
  },
});
const rate = Number(args.rate);
const perBatch = Number(args.batch);

/** A secret read's audit line, as long as one (the fields are what entry.ts writes for a read). */
function readLine(seq: number): string {
  return JSON.stringify({
    seq,
    ts: new Date().toISOString(),
    kind: 'request',
    request_id: `01JD${String(seq).padStart(22, '0')}`,
    route: 'kv.get',
    method: 'GET',
    path: '/v1/kv/bench/app/secret',
    namespace: 'bench/app',
    key: 'secret',
    version: 1,
    token_id: 'tok_4f3c2a1b0e9d8c7b',
    role: 'reader',
    source: '127.0.0.1',
    status: 200,
    outcome: 'ok',
    prev: 'a'.repeat(64),
    mac: 'b'.repeat(64),
  });
}

interface Slice {
  readonly lines: number;
  readonly userMicros: number;
  readonly systemMicros: number;
}

/**
 * Makes batches of lines at `rate` for `ms`, as the writer does (each batch's bytes made for the file),
 * and offers them to `stream` when given; the CPU per line.
 */
async function slice(
  stream: AuditStream | null,
  ms: number,
  seq: { next: number },
): Promise<Slice> {
  const started = process.cpuUsage();
  const t0 = Date.now();
  let lines = 0;
  while (Date.now() - t0 < ms) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    const due = Math.floor(((Date.now() - t0) / 1000) * rate);
    while (lines < due) {
      const batch = Array.from({ length: perBatch }, () => readLine(seq.next++));
      Buffer.from(batch.map((line) => `${line}\n`).join('')); // what the file sink makes of it
      if (stream) void stream.offer(batch);
      lines += batch.length;
    }
  }
  const used = process.cpuUsage(started);
  return { lines, userMicros: used.user / lines, systemMicros: used.system / lines };
}

async function main(): Promise<void> {
  const sink = await startStreamSink(1);
  const [spec] = parseStreams(`syslog+tcp://127.0.0.1:${sink.port}`);
  const stream = new AuditStream(spec!, transportFor(spec!), pino({ level: 'silent' }));
  const seq = { next: 1 };
  const ms = Number(args.seconds) * 1000;
  console.log(
    `one syslog-over-TCP stream, ${rate} lines a second in batches of ${perBatch}, ${readLine(1).length}-byte lines — ${describeMachine()}`,
  );
  try {
    await slice(stream, 1000, seq); // warm-up
    const added: number[] = [];
    for (let round = 1; round <= Number(args.rounds); round++) {
      const order = round % 2 === 1 ? [null, stream] : [stream, null];
      const got = new Map<AuditStream | null, Slice>();
      for (const s of order) got.set(s, await slice(s, ms, seq));
      const [off, on] = [got.get(null)!, got.get(stream)!];
      const cost = on.userMicros + on.systemMicros - off.userMicros - off.systemMicros;
      added.push(cost);
      console.log(
        `round ${round}  without ${(off.userMicros + off.systemMicros).toFixed(2)} µs a line (${off.systemMicros.toFixed(2)} system)   with ${(on.userMicros + on.systemMicros).toFixed(2)} µs (${on.systemMicros.toFixed(2)} system)   the stream's ${cost.toFixed(2)} µs`,
      );
    }
    console.log(`median: one stream costs ${median(added).toFixed(2)} µs of CPU an audit line`);
  } finally {
    await stream.close(2000);
    sink.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
