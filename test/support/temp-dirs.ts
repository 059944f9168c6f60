/**
 * Every temporary directory of a test run lives in one run directory, `<tmp>/coffer-test-run-<pid>-XXXXXX`,
 * the main process's, shared with its parallel workers, removed when the run ends, however it ends short of
 * SIGKILL: mocha's global tear-down, and the process's exit as a fallback. A run killed outright leaves its directory behind; the next run removes those whose
 * process is gone.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUN_PREFIX = 'coffer-test-run-';
/**
 * Set by the run's main process for the processes it starts (mocha's parallel workers): they make their
 * directories in its run directory, which it removes at the end — a worker is ended without its exit
 * handlers running, so one that made a run directory of its own left it behind.
 */
const SHARED_RUN_DIR = 'COFFER_TEST_RUN_DIR';
let runDir: string | undefined;
/** Whether this process made `runDir` (and so removes it). */
let owned = false;

function remove(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** This run's directory: the main process's, or one made now (and removed at this process's exit). */
export function runDirectory(): string {
  if (runDir === undefined) {
    const shared = process.env[SHARED_RUN_DIR];
    if (shared !== undefined && existsSync(shared)) runDir = shared;
    else {
      runDir = mkdtempSync(join(tmpdir(), `${RUN_PREFIX}${process.pid}-`));
      owned = true;
      process.once('exit', removeRunDir);
    }
  }
  return runDir;
}

/** The run's directory, made now, for every process this one starts (mocha's global set-up). */
export function shareRunDir(): void {
  process.env[SHARED_RUN_DIR] = runDirectory();
}

/** A new directory inside this run's directory. */
export function tempDir(prefix = 'coffer-test-'): string {
  return mkdtempSync(join(runDirectory(), prefix));
}

export function removeRunDir(): void {
  if (runDir === undefined || !owned) return;
  remove(runDir);
  runDir = undefined;
  owned = false;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the run directories of earlier runs whose process no longer exists. */
export function removeStaleRunDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(/^coffer-test-run-(\d+)-/.exec(name)?.[1]);
    if (pid > 0 && pid !== process.pid && !alive(pid)) remove(join(tmpdir(), name));
  }
}
