/**
 * A process killed in the middle of writing a batch can leave its chain's last file ending in part of a
 * line: Linux may cut a write of several pages short when a fatal signal arrives. That part was never
 * answered (a request waits until its whole batch is in the file), and every change it named has its
 * intent copy in the store, which intent recovery puts back into the log. At start-up, before any process
 * of this server writes to the audit directory, such a tail is cut back to the last whole line, and the
 * caller records each cut (file, bytes, their SHA-256) in the new chain, so `verify` reads whole lines and
 * the log says what was dropped.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { basename } from 'node:path';
import { auditFilesIn } from './files.js';

export interface TornTail {
  readonly file: string;
  readonly dropped_bytes: number;
  readonly dropped_sha256: string;
}

/**
 * Cuts every audit file in `dir` (or only `paths`: the files of a chain whose process is gone) that does
 * not end with a newline back to its last whole line.
 */
export function repairTornTails(dir: string, paths?: readonly string[]): TornTail[] {
  const repaired: TornTail[] = [];
  for (const path of paths ?? auditFilesIn(dir)) {
    const fd = openSync(path, 'r+');
    try {
      const size = fstatSync(fd).size;
      if (size === 0) continue;
      const last = Buffer.alloc(1);
      readSync(fd, last, 0, 1, size - 1);
      if (last[0] === 0x0a) continue;
      // The last newline, searched backwards in blocks.
      let keep = 0;
      const block = Buffer.alloc(64 * 1024);
      for (let end = size; end > 0 && keep === 0; ) {
        const start = Math.max(0, end - block.length);
        const read = readSync(fd, block, 0, end - start, start);
        const at = block.subarray(0, read).lastIndexOf(0x0a);
        if (at >= 0) keep = start + at + 1;
        end = start;
      }
      const dropped = Buffer.alloc(size - keep);
      readSync(fd, dropped, 0, dropped.length, keep);
      ftruncateSync(fd, keep);
      fsyncSync(fd);
      repaired.push({
        file: basename(path),
        dropped_bytes: dropped.length,
        dropped_sha256: createHash('sha256').update(dropped).digest('hex'),
      });
    } finally {
      closeSync(fd);
    }
  }
  return repaired;
}
