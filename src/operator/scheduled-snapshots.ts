/**
 * Scheduled snapshots (COFFER_SNAPSHOT_DIR, COFFER_SNAPSHOT_EVERY, COFFER_SNAPSHOT_KEEP), run by the
 * server's supervisor process: one snapshot of the store (operator/snapshot.ts: the records as stored,
 * from one consistent state, while the workers serve) per interval, the intervals counted from the epoch
 * (with `6h`: at 00:00, 06:00, 12:00 and 18:00 UTC), into
 *
 *   <dir>/coffer-snapshot-<start of the interval, YYYYMMDDTHHMMSSmmmZ>.snap
 *
 * written owner-only as `<name>.partial` (created exclusively), synced, then linked to its final name
 * (which fails rather than replace a file) and the directory synced, so a file with the final name is
 * always whole. So servers that share the directory (several servers on one store, with the directory on
 * shared storage) take one snapshot per interval between them: whoever creates the interval's `.partial`
 * first takes it, and the others log that it was taken. Then only the newest `keep` snapshots are kept.
 * A `.partial` nobody has written to for STALE_MS (a run that was killed) is removed by a later run. A run
 * that fails is logged and the schedule goes on; a server's runs never overlap.
 */
import { type FileHandle, link, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type KeyProviderSettings, openKeyProvider, providerConfig } from '../keys/registry.js';
import type { SnapshotSummary } from '../store/snapshot.js';
import { type StorageSettings, Store } from '../store/store.js';

const NAME = /^coffer-snapshot-\d{8}T\d{9}Z\.snap$/;
const PARTIAL = /^coffer-snapshot-\d{8}T\d{9}Z\.snap\.partial$/;
/** A `.partial` unwritten for this long belongs to a run that no longer runs. */
const STALE_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

export interface ScheduledSnapshotOptions {
  /** The store and its master key (whose keyring authenticates each snapshot). */
  readonly storage: StorageSettings & KeyProviderSettings;
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

/** The start of the interval of `everyMs` that holds `ms`, the intervals counted from the epoch. */
export function intervalOf(ms: number, everyMs: number): number {
  return Math.floor(ms / everyMs) * everyMs;
}

/** What a run did: took the interval's snapshot, or found another server had (or was taking) it. */
export type SnapshotRun =
  | { readonly taken: true; file: string; summary: SnapshotSummary; removed: string[] }
  | { readonly taken: false; file: string };

/**
 * Takes the snapshot of the interval that holds now into `dir`, unless another server has taken it or is
 * taking it; keeps the newest `keep`.
 */
export async function takeScheduledSnapshot(
  options: Omit<ScheduledSnapshotOptions, 'log'>,
): Promise<SnapshotRun> {
  const now = (options.now ?? Date.now)();
  const file = join(options.dir, snapshotName(intervalOf(now, options.everyMs)));
  const partial = `${file}.partial`;
  if (await exists(file)) return { taken: false, file };
  let handle: FileHandle;
  try {
    handle = await open(partial, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { taken: false, file };
    throw err;
  }
  let summary: SnapshotSummary;
  try {
    const store = await Store.open(options.storage);
    try {
      const { provider } = await openKeyProvider(options.storage);
      const { holder } = await store.openKeyring(
        { provider, config: providerConfig(options.storage) },
        now,
        { dataDir: options.storage.data_dir },
      );
      summary = await store.snapshot(handle, now, holder.current());
    } finally {
      await store.close();
    }
  } catch (err) {
    await handle.close();
    await rm(partial, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await link(partial, file);
    await rm(partial, { force: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      await rm(partial, { force: true });
      return { taken: false, file };
    }
    // A file system without hard links (some network mounts): the rename of our own `.partial`, whose
    // exclusive creation already made this run the interval's only one.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw err;
    await rename(partial, file);
  }
  const dir = await open(options.dir, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return { taken: true, file, summary, removed: await prune(options.dir, options.keep, now) };
}

/** A scheduled snapshot's file as the directory shows it. */
export interface SnapshotFile {
  readonly name: string;
  /** The state it holds: the start of its interval (its name says it). */
  readonly takenAt: number;
  /** When its file was written whole. */
  readonly writtenAt: number;
  readonly bytes: number;
}

/**
 * The scheduled snapshots in `dir`, newest first: files named as they are, never a `.partial` (a snapshot
 * being written, or one whose run was killed). A directory not there yet holds none.
 */
export async function listSnapshots(dir: string): Promise<SnapshotFile[]> {
  const files: SnapshotFile[] = [];
  for (const name of (await snapshotNames(dir)).reverse()) {
    const facts = await stat(join(dir, name)).catch(() => undefined);
    // Removed between the listing and now (pruned by a run): not there any more.
    if (facts?.isFile())
      files.push({ name, takenAt: timeOfName(name), writtenAt: facts.mtimeMs, bytes: facts.size });
  }
  return files;
}

/** The state the newest snapshot in `dir` holds (ms since the epoch), from the names alone; undefined: none. */
export async function newestSnapshotTime(dir: string): Promise<number | undefined> {
  const newest = (await snapshotNames(dir)).at(-1);
  return newest === undefined ? undefined : timeOfName(newest);
}

/** The names of the snapshots in `dir`, oldest first (names sort by time); none when it is not there yet. */
async function snapshotNames(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => NAME.test(n)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** The interval start a snapshot's name holds (`coffer-snapshot-20261125T060000000Z.snap`). */
function timeOfName(name: string): number {
  return Date.parse(
    name.replace(
      /^coffer-snapshot-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z\.snap$/,
      '$1-$2-$3T$4:$5:$6.$7Z',
    ),
  );
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Removes all but the newest `keep` snapshots, and `.partial` files nobody has written to for STALE_MS. */
async function prune(dir: string, keep: number, now: number): Promise<string[]> {
  const names = await readdir(dir);
  const snapshots = names.filter((n) => NAME.test(n)).sort();
  const old = snapshots.slice(0, Math.max(0, snapshots.length - keep));
  for (const name of names.filter((n) => PARTIAL.test(n))) {
    const written = await stat(join(dir, name)).then(
      (s) => s.mtimeMs,
      () => now,
    );
    if (now - written > STALE_MS) old.push(name);
  }
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
      const done = await takeScheduledSnapshot(options);
      if (!done.taken) {
        log.info(
          { event: 'snapshot.skipped', file: done.file },
          "this interval's scheduled snapshot was taken by another server",
        );
        return;
      }
      const { file, summary, removed } = done;
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
  const clock = options.now ?? Date.now;
  // At the start of each interval (a run that took longer than an interval goes on to the next start);
  // a wait longer than a timer can hold (about 24.8 days) is made in steps of a day.
  const schedule = (): void => {
    const due = intervalOf(clock(), options.everyMs) + options.everyMs;
    const wait = (): void => {
      if (stopped) return;
      const left = due - clock();
      timer =
        left > DAY_MS
          ? setTimeout(wait, DAY_MS)
          : setTimeout(
              () => {
                timer = null;
                running = run().finally(schedule);
              },
              Math.max(0, left),
            );
      timer.unref();
    };
    wait();
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
