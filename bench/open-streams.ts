/**
 * What open change streams cost reads (issue #41: 1,000 open streams ≤ 10% of reads per second): two
 * one-process servers of this build, both pinned to core 0, each written to at a steady `--writes` a
 * second while it is read (every write wakes every stream); one has `--streams` open change streams (GET /v1/events, held
 * by a child process on core 1 that reads and drops what they send), the other none. Secret reads with wrk
 * (core 1) alternate between the two in slices (A B, B A, …); reported: the median ratio of reads a second
 * (with streams / without) and of the server's CPU per read, and the events each stream got.
 *
 *   npm run build && node dist/bench/open-streams.js [--streams 1000] [--writes 20] [--rounds 6] [--seconds 3] [--together]
 *
 * With --together both servers are read at once in every slice (a wrk of 16 connections each) and both
 * are written to, so that they share core 0 and whatever else the machine does falls on both in the
 * same moment (bench/against-commit.ts --together says why).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateToken } from '../src/auth/token-format.js';
import { api } from './api.js';
import * as shape from './cases.js';
import { processCpuSplit } from './cpu-accounting.js';
import { describeMachine, pinned } from './machine.js';
import { median } from './report.js';
import { type RunningServer, startDirectCoffer } from './servers.js';
import { ensureTools, runWrk } from './wrk.js';

const SELF = fileURLToPath(import.meta.url);

/** The child that holds the streams: `node open-streams.js hold <url> <tokens,…> <count>`. */
async function hold(url: string, tokens: string[], count: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  let events = 0;
  let open = 0;
  for (let i = 0; i < count; i++)
    request(
      `${url}/v1/events?namespaces=bench/streamed`,
      { agent, headers: { authorization: `Bearer ${tokens[i % tokens.length]}` } },
      (res) => {
        if (res.statusCode !== 200) {
          console.error(`a stream was refused: ${res.statusCode}`);
          process.exit(1);
        }
        if (++open === count) process.stdout.write(`open ${count}\n`);
        // Read and dropped; the events counted by their data lines.
        res.on('data', (chunk: Buffer) => {
          for (let at = chunk.indexOf('data:'); at >= 0; at = chunk.indexOf('data:', at + 5))
            events++;
        });
      },
    ).end();
  process.on('SIGTERM', () => {
    process.stdout.write(`events ${events}\n`);
    process.exit(0);
  });
}

interface Subject {
  readonly server: RunningServer;
  readonly dir: string;
  readonly lua: string;
  readonly writer: string;
}

async function subject(root: string): Promise<Subject> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-bench-'));
  const server = await startDirectCoffer(
    {
      dataDir: dir,
      rootToken: root,
      core: 0,
      // Room for the streams: one token holds a quarter of the waits, one address half.
      env: { COFFER_MAX_WAITS: '100000' },
    },
    true,
  );
  await api(server.url, root, 'PUT', '/v1/kv/bench/app/secret', {
    value: 'p'.repeat(64),
    type: 'secret',
  });
  const reader = String(
    (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'reader' })).token,
  );
  const writer = String(
    (await api(server.url, root, 'POST', '/v1/auth/token', { role: 'writer' })).token,
  );
  return { server, dir, lua: shape.get('/v1/kv/bench/app/secret', reader), writer };
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      streams: { type: 'string', default: '1000' },
      writes: { type: 'string', default: '20' },
      rounds: { type: 'string', default: '6' },
      seconds: { type: 'string', default: '3' },
      together: { type: 'boolean', default: false },
    },
  });
  const streams = Number(args.streams);
  const writes = Number(args.writes);
  ensureTools({ wrk: 'wrk', taskset: 'util-linux' });
  const root = generateToken().value;
  const [withStreams, without] = [await subject(root), await subject(root)];
  const stops: (() => void)[] = [];
  try {
    // Steady writes to the server being read, each waking every stream it has; none to the other, so that
    // the streams' work falls in their server's own slices.
    const writing = new Set<Subject>();
    let n = 0;
    if (writes > 0) {
      const timer = setInterval(() => {
        const k = n++ % 100;
        for (const s of writing)
          api(s.server.url, s.writer, 'PUT', `/v1/kv/bench/streamed/k${k}`, {
            value: 'v',
            type: 'config',
          }).catch(() => undefined);
      }, 1000 / writes);
      stops.push(() => clearInterval(timer));
    }
    const tokens = await Promise.all(
      Array.from({ length: 8 }, async () =>
        String(
          (await api(withStreams.server.url, root, 'POST', '/v1/auth/token', { role: 'reader' }))
            .token,
        ),
      ),
    );
    const [cmd, argv] = pinned(1, process.execPath, [
      SELF,
      'hold',
      withStreams.server.url,
      tokens.join(','),
      String(streams),
    ]);
    const holder = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    // Not left behind when a round fails (killed again after its count is read: harmless).
    stops.push(() => holder.kill('SIGKILL'));
    let said = '';
    holder.stdout!.on('data', (d: Buffer) => (said += d.toString()));
    while (!said.includes('open ')) {
      if (holder.exitCode !== null) throw new Error('the stream holder exited');
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(
      `${streams} open change streams against none, ${writes} writes a second to each server — ${describeMachine()}; both servers on core 0, wrk (32 connections) and the streams' holder on core 1${args.together ? '; both read at once (16 connections each)' : ''}`,
    );
    const ratios: number[] = [];
    const cpu: number[] = [];
    const slice = async (s: Subject, connections = 32) => {
      writing.add(s);
      const pid = s.server.servingPids()[0]!;
      const before = processCpuSplit(pid);
      const r = await runWrk({
        url: s.server.url,
        lua: s.lua,
        connections,
        seconds: Number(args.seconds),
        core: 1,
      });
      const after = processCpuSplit(pid);
      writing.delete(s);
      return {
        rps: r.requestsPerSecond,
        cpu: (after.user + after.system - before.user - before.system) / r.requests,
      };
    };
    await slice(withStreams);
    await slice(without);
    for (let round = 1; round <= Number(args.rounds); round++) {
      const got = new Map<Subject, { rps: number; cpu: number }>();
      if (args.together) {
        const [a, b] = await Promise.all([slice(withStreams, 16), slice(without, 16)]);
        got.set(withStreams, a).set(without, b);
      } else {
        const order = round % 2 ? [withStreams, without] : [without, withStreams];
        for (const s of order) got.set(s, await slice(s));
      }
      const [a, b] = [got.get(withStreams)!, got.get(without)!];
      ratios.push(a.rps / b.rps);
      cpu.push(a.cpu / b.cpu);
      console.log(
        `round ${round}  with streams ${a.rps.toFixed(0)} reads/s   without ${b.rps.toFixed(0)} reads/s   ratio ${(a.rps / b.rps).toFixed(3)}`,
      );
    }
    holder.kill('SIGTERM');
    await new Promise((r) => holder.once('close', r));
    const events = Number(/events (\d+)/.exec(said)?.[1] ?? 0);
    console.log(
      `median: reads with ${streams} open streams ${median(ratios).toFixed(3)} of without (cost ${((1 - median(ratios)) * 100).toFixed(1)}%), CPU per read ${median(cpu).toFixed(3)}; the streams got ${events} event frames in all (${(events / streams).toFixed(0)} each)`,
    );
  } finally {
    for (const stop of stops) stop();
    for (const s of [withStreams, without]) {
      await s.server.stop();
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
}

if (process.argv[2] === 'hold')
  await hold(process.argv[3]!, process.argv[4]!.split(','), Number(process.argv[5]));
else
  await main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
