/**
 * Scheduled snapshots (COFFER_SNAPSHOT_DIR, COFFER_SNAPSHOT_EVERY, COFFER_SNAPSHOT_KEEP), run by the
 * server's supervisor process: every `everyMs` one snapshot of the store (operator/snapshot.ts: the
 * records as stored, from one consistent state, while the workers serve) into
 *
 *   <dir>/coffer-snapshot-<YYYYMMDDTHHMMSSmmmZ>.snap
 *
 * written owner-only as `<name>.partial`, synced, then renamed (and the directory synced), so a file with
 * the final name is always whole; then only the newest `keep` snapshots are kept. A `.partial` left by a
 * run that was cut off (the process killed) is removed by the next run. A run that fails is logged and
 * the schedule goes on; runs never overlap.
 */
import { open, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { openStorage, type StorageSettings } from '../storage/registry.js';
import { type SnapshotSummary, writeSnapshot } from './snapshot.js';

const NAME = /^coffer-snapshot-\d{8}T\d{9}Z\.snap$/;
const PARTIAL = /^coffer-snapshot-\d{8}T\d{9}Z\.snap\.partial$/;

export interface ScheduledSnapshotOptions {
  readonly storage: StorageSettings;
  readonly dir: string;
  readonly everyMs: number;
  readonly keep: number;
  readonly log: Logger;
  readonly now?: () => number;
}

export interface ScheduledSnapshots {
  /** Stops the schedule and waits for a run in progress. */
  stop(): Promise<void>;
}

/** The file name of a snapshot taken at `ms`: names sort by time. */
export function snapshotName(ms: number): string {
  const stamp = new Date(ms).toISOString().replace(/[-:.]/g, '');
  return `coffer-snapshot-${stamp}.snap`;
}

/** Takes one snapshot into `dir` and keeps the newest `keep`; returns the file and what it holds. */
export async function takeScheduledSnapshot(
  options: Omit<ScheduledSnapshotOptions, 'everyMs' | 'log'>,
): Promise<{ file: string; summary: SnapshotSummary; removed: string[] }> {
  const now = (options.now ?? Date.now)();
  const file = join(options.dir, snapshotName(now));
  const partial = `${file}.partial`;
  const storage = await openStorage(options.storage);
  let summary: SnapshotSummary;
  try {
    const handle = await open(partial, 'wx', 0o600);
    try {
      summary = await writeSnapshot(storage, handle, now);
    } catch (err) {
      await handle.close();
      await rm(partial, { force: true });
      throw err;
    }
    await handle.close();
  } finally {
    await storage.close();
  }
  await rename(partial, file);
  const dir = await open(options.dir, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return { file, summary, removed: await prune(options.dir, options.keep, partial) };
}

/** Removes all but the newest `keep` snapshots, and `.partial` files other than `current`. */
async function prune(dir: string, keep: number, current: string): Promise<string[]> {
  const names = await readdir(dir);
  const snapshots = names.filter((n) => NAME.test(n)).sort();
  const old = [
    ...snapshots.slice(0, Math.max(0, snapshots.length - keep)),
    ...names.filter((n) => PARTIAL.test(n) && join(dir, n) !== current),
  ];
  for (const name of old) await rm(join(dir, name), { force: true });
  return old;
}

export function startScheduledSnapshots(options: ScheduledSnapshotOptions): ScheduledSnapshots {
  const { log } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();

  const run = async (): Promise<void> => {
    const started = Date.now();
    try {
      const { file, summary, removed } = await takeScheduledSnapshot(options);
      log.info(
        {
          event: 'snapshot.taken',
          file,
          records: summary.records,
          sha256: summary.sha256,
          keyring: summary.keyring,
          removed,
          ms: Date.now() - started,
        },
        'scheduled snapshot written',
      );
    } catch (err) {
      log.error(
        { event: 'snapshot.failed', dir: options.dir, reason: (err as Error).message },
        'scheduled snapshot failed; the next one is tried on schedule',
      );
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = null;
      running = run().finally(schedule);
    }, options.everyMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
    },
  };
}
