/**
 * Each audit stream is sent the lines of this host's stopped chains that it had not taken when their
 * processes stopped (stream-progress.ts) — a stream that was down then, a process killed during an outage,
 * or a syslog connection that broke in the last moments. In order, from the first line after the seq the
 * stream took, in batches; a chain whose every line the stream has, and whose process is gone, is
 * forgotten. At a start, before serving, for a bounded time (catchUpStreams); then, while the server runs,
 * again every few seconds until nothing waits (CatchUp): a stream that comes back while the server runs
 * gets those lines then, not at the next start. The lines still waiting count in the stream's lag. One
 * process of the host catches a stream up at a time (a lock file beside its progress). Chains the stream never
 * followed (it was added later) are not sent: the local log holds them.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { processRuns } from '../../processes.js';
import { auditFilesIn, chainFiles, chainFileText } from '../files.js';
import { forgetProgress, progressDir, progressOf, saveProgress } from './stream-progress.js';
import type { StreamSpec } from './stream-spec.js';
import type { StreamTransport } from './transports.js';

const BATCH = 1000;
/** How long a start gives all its streams together to take what waited for them. */
const CATCH_UP_MS = 10_000;
/** While serving: how often the waiting lines are tried, and how long each try may send. */
const RUNNING_EVERY_MS = 5_000;
const RUNNING_TRY_MS = 3_000;

/** The pid in a chain's name (`<time>-<pid>-<random>`), whose process wrote it. */
function writerPid(chain: string): number {
  return Number(chain.split('-')[1]);
}

export interface CatchUpInput {
  readonly auditDir: string;
  readonly specs: readonly StreamSpec[];
  readonly transport: (spec: StreamSpec) => StreamTransport;
  readonly log: Logger;
  readonly now?: () => number;
}

/**
 * Takes the stream's catch-up for this process (its release), or undefined when a live process of the
 * host has it: one process sends the stopped chains' lines, and counts them.
 */
function lock(auditDir: string, stream: string): (() => void) | undefined {
  const file = join(progressDir(auditDir, stream), '.lock');
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
      const holder = Number(readFileSync(file, 'utf8').trim());
      if (Number.isSafeInteger(holder) && holder !== process.pid && processRuns(holder))
        return undefined;
      // Its process is gone (or wrote nothing yet): the lock is stale.
      rmSync(file, { force: true });
    }
  }
  return undefined;
}

/**
 * One pass over every stream's waiting chains, sending until `until`; the lines still waiting for each
 * stream afterwards.
 */
async function catchUpOnce(input: CatchUpInput, until: number): Promise<Map<string, number>> {
  const { auditDir, log } = input;
  const now = input.now ?? Date.now;
  const waitingLines = new Map<string, number>();
  const chains = chainFiles(auditFilesIn(auditDir));
  for (const spec of input.specs) {
    const waiting = [...progressOf(auditDir, spec.name)].filter(
      ([chain]) => !processRuns(writerPid(chain)),
    );
    let left = 0;
    if (waiting.length === 0) {
      waitingLines.set(spec.name, 0);
      continue;
    }
    const release = lock(auditDir, spec.name);
    // Another process of the host sends (and counts) them now.
    if (!release) {
      waitingLines.set(spec.name, 0);
      continue;
    }
    const transport = input.transport(spec);
    let down = false;
    try {
      for (const [chain, took] of waiting) {
        const files = chains.get(chain);
        if (!files) {
          // Its files are gone (archived): nothing here to send.
          forgetProgress(auditDir, spec.name, chain);
          continue;
        }
        const lines: string[] = [];
        for (const file of files)
          for (const line of chainFileText(file).split('\n')) {
            if (line === '') continue;
            const seq = Number(/^\{"seq":(\d+),/.exec(line)?.[1]);
            if (seq > took) lines.push(line);
          }
        let sent = 0;
        while (!down && sent < lines.length && now() < until) {
          const batch = lines.slice(sent, sent + BATCH);
          try {
            await transport.send(batch);
          } catch (err) {
            const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
            log.warn(
              {
                event: 'audit.stream_catch_up',
                stream: spec.name,
                chain,
                waiting: lines.length - sent,
                reason,
              },
              'audit stream %s does not take the lines a stopped process left for it; they are sent again in a few seconds',
              spec.name,
            );
            down = true;
            break;
          }
          sent += batch.length;
          saveProgress(auditDir, spec.name, chain, took + sent);
        }
        left += lines.length - sent;
        if (sent === lines.length) {
          forgetProgress(auditDir, spec.name, chain);
          if (sent > 0)
            log.info(
              { event: 'audit.stream_catch_up', stream: spec.name, chain, sent },
              'sent audit stream %s the %d lines a stopped process left for it',
              spec.name,
              sent,
            );
        }
      }
    } finally {
      transport.close();
      release();
    }
    waitingLines.set(spec.name, left);
  }
  return waitingLines;
}

/** At a start, before serving: what waited for the streams, for up to CATCH_UP_MS in all. */
export async function catchUpStreams(input: CatchUpInput): Promise<Map<string, number>> {
  if (input.specs.length === 0) return new Map();
  return catchUpOnce(input, (input.now ?? Date.now)() + CATCH_UP_MS);
}

/**
 * While the server runs: the stopped chains' lines each stream still lacks, sent every RUNNING_EVERY_MS
 * until none waits, and counted (`waiting`) in the stream's lag.
 */
export class CatchUp {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private counts = new Map<string, number>();
  private stopped = false;

  constructor(private readonly input: CatchUpInput) {}

  start(): void {
    if (this.input.specs.length === 0) return;
    this.timer = setInterval(() => this.tick(), RUNNING_EVERY_MS);
    this.timer.unref();
    this.tick();
  }

  /** Lines of stopped chains that `stream` has not taken yet, as the last pass counted them. */
  waiting(stream: string): number {
    return this.counts.get(stream) ?? 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  private tick(): void {
    this.running = this.running.then(async () => {
      if (this.stopped) return;
      const until = (this.input.now ?? Date.now)() + RUNNING_TRY_MS;
      this.counts = await catchUpOnce(this.input, until).catch((err: Error) => {
        this.input.log.warn(
          { event: 'audit.stream_catch_up', reason: err.message },
          'the lines stopped processes left for the audit streams could not be sent now',
        );
        return this.counts;
      });
    });
  }
}
