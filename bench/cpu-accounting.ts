/**
 * Where a load's CPU went, from /proc: the serving processes, PostgreSQL's processes (every process named
 * `postgres`: its backends, WAL writer, checkpointer…) and the whole machine (whatever else ran: wrk, the
 * kernel's interrupts). Linux only; used by the storage bench to say what a request costs each party.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** User + system seconds of one process (0 when it is gone). */
export function processCpu(pid: number): number {
  const { user, system } = processCpuSplit(pid);
  return user + system;
}

/** User and system seconds of one process, apart (0 when it is gone). */
export function processCpuSplit(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return {
      user: Number(fields[11]) / TICKS_PER_SECOND,
      system: Number(fields[12]) / TICKS_PER_SECOND,
    };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** User + system seconds of each process whose name is `postgres`, by pid. */
export function postgresCpu(): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (comm === 'postgres') byPid.set(Number(entry), processCpu(Number(entry)));
    } catch {
      // gone between the listing and the read
    }
  }
  return byPid;
}

/**
 * PostgreSQL's CPU between two readings: each process's growth, a process started since counted whole (a
 * new connection's backend), one gone since not at all (what it used after the first reading is lost).
 */
function postgresGrowth(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/** Busy (not idle, not iowait) seconds of the whole machine, summed over its cores. */
export function machineBusy(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  return (ticks.reduce((a, b) => a + b, 0) - idle) / TICKS_PER_SECOND;
}

export interface CpuSplit {
  /** CPU seconds of the serving processes, PostgreSQL, and everything else, per request. */
  readonly server: number;
  readonly postgres: number;
  readonly other: number;
}

/** Runs `work` (a load answering `requests` requests) and splits the CPU it took per request. */
export async function cpuPerRequest<T extends { requests: number }>(
  servers: readonly number[],
  work: () => Promise<T>,
): Promise<{ result: T; cpu: CpuSplit }> {
  const serverCpu = () => servers.reduce((sum, pid) => sum + processCpu(pid), 0);
  const before = { server: serverCpu(), postgres: postgresCpu(), machine: machineBusy() };
  const result = await work();
  const server = serverCpu() - before.server;
  const postgres = postgresGrowth(before.postgres, postgresCpu());
  const machine = machineBusy() - before.machine;
  const n = Math.max(1, result.requests);
  return {
    result,
    cpu: {
      server: server / n,
      postgres: postgres / n,
      other: Math.max(0, machine - server - postgres) / n,
    },
  };
}
