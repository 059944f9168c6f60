/** Observing the audit writer's disk syncs from outside: the time of every FileHandle.datasync() call. */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

export interface DatasyncProbe {
  /** performance.now() of each datasync since the probe was installed (clear it with `times.length = 0`). */
  readonly times: number[];
  /** Each sync takes at least this much longer (a slow disk); 0 by default. */
  delayMs: number;
  restore(): void;
}

/** Wraps FileHandle.prototype.datasync for this process; LMDB's own syncs (native code) are not seen. */
export async function probeDatasyncs(): Promise<DatasyncProbe> {
  const handle = await open(join(tempDir(), 'probe'), 'w');
  const proto = Object.getPrototypeOf(handle) as { datasync: () => Promise<void> };
  await handle.close();
  const original = proto.datasync;
  const times: number[] = [];
  const probe: DatasyncProbe = {
    times,
    delayMs: 0,
    restore: () => {
      proto.datasync = original;
    },
  };
  proto.datasync = async function (this: unknown) {
    times.push(performance.now());
    if (probe.delayMs > 0) await new Promise((r) => setTimeout(r, probe.delayMs));
    return original.call(this);
  };
  return probe;
}
