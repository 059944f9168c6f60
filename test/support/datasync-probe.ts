/** Observing the audit writer's disk syncs from outside: the time of every FileHandle.datasync() call. */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

export interface DatasyncProbe {
  /** performance.now() of each datasync since the probe was installed (clear it with `times.length = 0`). */
  readonly times: number[];
  restore(): void;
}

/** Wraps FileHandle.prototype.datasync for this process; LMDB's own syncs (native code) are not seen. */
export async function probeDatasyncs(): Promise<DatasyncProbe> {
  const handle = await open(join(tempDir(), 'probe'), 'w');
  const proto = Object.getPrototypeOf(handle) as { datasync: () => Promise<void> };
  await handle.close();
  const original = proto.datasync;
  const times: number[] = [];
  proto.datasync = function (this: unknown) {
    times.push(performance.now());
    return original.call(this);
  };
  return {
    times,
    restore: () => {
      proto.datasync = original;
    },
  };
}
