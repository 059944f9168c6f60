/** Whether a process of this host still runs (for the owners of leases and audit chains). */
import { readFileSync } from 'node:fs';

/**
 * Whether process `pid` runs on this host. A process killed whose parent died too may linger a moment as
 * a zombie (state Z in /proc) before init reaps it: that is not running.
 */
export function processRuns(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
