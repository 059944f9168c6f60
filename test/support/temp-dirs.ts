/**
 * Every temporary directory of a test run lives in one run directory, `<tmp>/coffer-test-run-<pid>-XXXXXX`,
 * removed when the run ends, however it ends short of SIGKILL: mocha's global tear-down, and the process's
 * exit as a fallback. A run killed outright leaves its directory behind; the next run removes those whose
 * process is gone.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUN_PREFIX = 'coffer-test-run-';
let runDir: string | undefined;

function remove(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** A new directory inside this run's directory. */
export function tempDir(prefix = 'coffer-test-'): string {
  if (runDir === undefined) {
    runDir = mkdtempSync(join(tmpdir(), `${RUN_PREFIX}${process.pid}-`));
    process.once('exit', removeRunDir);
  }
  return mkdtempSync(join(runDir, prefix));
}

export function removeRunDir(): void {
  if (runDir === undefined) return;
  remove(runDir);
  runDir = undefined;
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
