/** Facts about the bench machine, and pinning commands to cores with taskset where possible. */
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';

const canPin = cpus().length >= 2 && (() => {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

export const pinning = canPin;

/** `command args…`, run on `core` only when the machine can pin; `core` null means unpinned. */
export function pinned(core: number | null, command: string, args: string[]): [string, string[]] {
  return canPin && core !== null ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
}

export function describeMachine(): string {
  return `${cpus().length} × ${cpus()[0]?.model?.trim() ?? 'unknown CPU'}, node ${process.version}`;
}
