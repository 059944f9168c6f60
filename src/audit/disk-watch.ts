/**
 * Watches the free space of the audit directory's file system: below `minFreeBytes` it logs a warning (at
 * once, then every ten minutes while it lasts, and once more when space is back), because a full disk makes
 * the fail-closed audit log refuse every request with 503. Checked every `everyMs`.
 */
import { statfs } from 'node:fs/promises';
import type { Logger } from 'pino';

const REPEAT_MS = 10 * 60_000;

export interface DiskWatch {
  /** The latest reading, for a health endpoint. */
  readonly state: () => { readonly free_bytes: number | null; readonly low: boolean };
  stop(): void;
}

export function watchDisk(
  dir: string,
  minFreeBytes: number,
  log: Logger,
  everyMs = 30_000,
): DiskWatch {
  let free: number | null = null;
  let low = false;
  let warnedAt = 0;
  const check = async (): Promise<void> => {
    try {
      const stats = await statfs(dir);
      free = stats.bavail * stats.bsize;
    } catch {
      return; // the directory is gone or unreadable: the audit writer reports that itself
    }
    const wasLow = low;
    low = free < minFreeBytes;
    if (low && (!wasLow || Date.now() - warnedAt >= REPEAT_MS)) {
      warnedAt = Date.now();
      log.warn(
        { event: 'disk.low', dir, free_bytes: free, min_free_bytes: minFreeBytes },
        `free space for the audit log is low: ${free} bytes left in ${dir} (below ${minFreeBytes}); when it runs out, every request is refused with 503 — archive old audit files (coffer audit archive) or add space`,
      );
    } else if (!low && wasLow) {
      log.info(
        { event: 'disk.ok', dir, free_bytes: free },
        'free space for the audit log is back above the threshold',
      );
    }
  };
  void check();
  const timer = setInterval(() => void check(), everyMs);
  timer.unref();
  return { state: () => ({ free_bytes: free, low }), stop: () => clearInterval(timer) };
}
