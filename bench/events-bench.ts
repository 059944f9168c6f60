/**
 * Issue #41's targets in `npm run bench` (`--only events`): write → event p99 at 1,000 writes a second on
 * LMDB and on two PostgreSQL servers (bench/event-latency.ts, each server with 1 and with 2 workers; where
 * the two servers' workers outnumber the machine's cores, as 2 × 2 on 2 cores, the figure is printed but
 * judged against no target: each server then has half the cores it would have on a machine of its own,
 * and the machine was measured busy 98% of the time, docs/performance.md), and
 * what 1,000 open streams with an event a second each cost reads, alternated
 * (bench/open-streams.ts). Each runs as its own process, as when run by hand; their closing lines are
 * read here. (The event record's own cost on durable writes needs a build without it:
 * `npm run bench:against` against such a commit, docs/performance.md.)
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Target, target } from './report.js';
import { benchPgUrl } from './storage.js';

const HERE = dirname(fileURLToPath(import.meta.url));

export interface EventsRound {
  readonly case: string;
  /** The closing lines the script printed. */
  readonly summary: string;
}

/** The script's output (a bench script prints its figures on stdout). */
function run(script: string, args: readonly string[]): string {
  return execFileSync(process.execPath, [join(HERE, script), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** The number after `label` in `text`, or NaN. */
function figure(text: string, label: RegExp): number {
  const found = label.exec(text);
  return found ? Number(found[1]) : Number.NaN;
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: benchPgUrl(), connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function eventsCost(): Promise<{ rounds: EventsRound[]; targets: Target[] }> {
  const rounds: EventsRound[] = [];
  const targets: Target[] = [];
  const storages = (await postgresReachable()) ? ['lmdb', 'postgres'] : ['lmdb'];
  if (storages.length === 1)
    console.error(
      `events: PostgreSQL not reachable at ${benchPgUrl()}: its latency is not measured`,
    );
  for (const storage of storages)
    for (const workers of [1, 2]) {
      const name =
        storage === 'lmdb'
          ? `write → event p99 ms, LMDB, ${workers} worker(s)`
          : `write → event p99 ms, 2 PostgreSQL servers × ${workers} worker(s)`;
      console.error(`events: ${name}`);
      const out = run('event-latency.js', [
        '--rate',
        '1000',
        '--seconds',
        '10',
        '--workers',
        String(workers),
        '--storage',
        storage,
      ]);
      const oversubscribed = storage === 'postgres' && 2 * workers > availableParallelism();
      rounds.push({
        case: oversubscribed
          ? `${name} (${2 * workers} workers on ${availableParallelism()} cores: no target)`
          : name,
        summary: out.trim().split('\n').slice(-3).join('\n'),
      });
      if (!oversubscribed)
        targets.push(
          target(name, figure(out, /to its event: p50 [\d.]+ ms, p99 ([\d.]+) ms/), '≤', 100),
        );
    }
  console.error('events: 1,000 open streams, one event a second each, alternated');
  const streams = run('open-streams.js', ['--streams', '1000', '--writes', '1', '--rounds', '12']);
  rounds.push({
    case: 'reads with 1,000 open streams / without',
    summary: streams.trim().split('\n').at(-1)!,
  });
  targets.push(
    target(
      'reads with 1,000 open streams / without',
      figure(streams, /open streams ([\d.]+) of without/),
      '≥',
      0.9,
    ),
  );
  return { rounds, targets };
}
