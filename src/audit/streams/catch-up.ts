/**
 * At a start, before serving: each audit stream is sent the lines of this host's stopped chains that it
 * had not taken when their processes stopped (stream-progress.ts) — a stream that was down then, or a
 * syslog connection that broke in the last moments. In order, from the first line after the seq the stream
 * took, in batches; a chain whose every line the stream has, and whose process is gone, is forgotten. A
 * stream still down is tried for a bounded time and left for the next start, said in the server's log.
 * Chains the stream never followed (it was added later) are not sent: the local log holds them.
 */
import type { Logger } from 'pino';
import { processRuns } from '../../processes.js';
import { auditFilesIn, chainFiles, chainFileText } from '../files.js';
import { forgetProgress, progressOf, saveProgress } from './stream-progress.js';
import type { StreamSpec } from './stream-spec.js';
import type { StreamTransport } from './transports.js';

const BATCH = 1000;
/** How long a start gives all its streams together to take what waited for them. */
const CATCH_UP_MS = 10_000;

/** The pid in a chain's name (`<time>-<pid>-<random>`), whose process wrote it. */
function writerPid(chain: string): number {
  return Number(chain.split('-')[1]);
}

export async function catchUpStreams(input: {
  readonly auditDir: string;
  readonly specs: readonly StreamSpec[];
  readonly transport: (spec: StreamSpec) => StreamTransport;
  readonly log: Logger;
  readonly now?: () => number;
}): Promise<void> {
  const { auditDir, log } = input;
  const now = input.now ?? Date.now;
  const until = now() + CATCH_UP_MS;
  if (input.specs.length === 0) return;
  const chains = chainFiles(auditFilesIn(auditDir));
  for (const spec of input.specs) {
    const waiting = [...progressOf(auditDir, spec.name)].filter(
      ([chain]) => !processRuns(writerPid(chain)),
    );
    if (waiting.length === 0) continue;
    const transport = input.transport(spec);
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
        while (sent < lines.length && now() < until) {
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
              'audit stream %s does not take the lines a stopped process left for it; the next start sends them',
              spec.name,
            );
            break;
          }
          sent += batch.length;
          saveProgress(auditDir, spec.name, chain, took + sent);
        }
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
        if (now() >= until) break;
      }
    } finally {
      transport.close();
    }
  }
}
