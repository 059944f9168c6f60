/** Facts about the bench machine, and pinning commands to cores with taskset where possible. */
import { execFileSync } from 'node:child_process';
import { cpus, release, totalmem } from 'node:os';

const canPin =
  cpus().length >= 2 &&
  (() => {
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
  return canPin && core !== null
    ? ['taskset', ['-c', String(core), command, ...args]]
    : [command, args];
}

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memory_gib: number;
  readonly kernel: string;
  readonly node: string;
}

/** What a result depends on: two runs are compared only when these match (and never across machines). */
export function machine(): Machine {
  return {
    cpu: cpus()[0]?.model?.trim() ?? 'unknown CPU',
    cores: cpus().length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    kernel: `Linux ${release()}`,
    node: process.version,
  };
}

export function describeMachine(): string {
  const m = machine();
  return `${m.cores} × ${m.cpu}, node ${m.node}`;
}
