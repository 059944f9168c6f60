/**
 * How far each audit stream has taken each chain of this host, kept beside the chain it follows:
 *
 *   <audit dir>/streams/<stream name>/<chain>     holding the last seq the stream took, in decimal
 *
 * written (whole: a temporary file renamed over it) at most every 5 s while the chain is shipped, and
 * when its process stops — less the lines a broken syslog connection may still lose, which are sent again.
 * A start on the host sends each stopped chain's lines after that seq (catch-up.ts), so lines that waited
 * for a stream when their process stopped still reach it. Not secret: it holds a number.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A save is a file written and renamed on the event loop: measured at 3–4 µs of every read's CPU when once
 * a second on a slow disk. A crash sends again what followed the last save (a receiver takes a line twice,
 * in order), so this bounds only the repeats.
 */
const SAVE_EVERY_MS = 5_000;

export function progressDir(auditDir: string, stream: string): string {
  return join(auditDir, 'streams', stream);
}

/** The chains the stream has a progress file for, with the seq each was taken through. */
export function progressOf(auditDir: string, stream: string): Map<string, number> {
  const dir = progressDir(auditDir, stream);
  const found = new Map<string, number>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return found;
  }
  for (const chain of names) {
    if (chain.endsWith('.tmp') || chain.endsWith('.lock')) continue;
    const seq = Number(readFileSync(join(dir, chain), 'utf8').trim());
    if (Number.isSafeInteger(seq) && seq >= 0) found.set(chain, seq);
  }
  return found;
}

export function saveProgress(auditDir: string, stream: string, chain: string, seq: number): void {
  const dir = progressDir(auditDir, stream);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, chain);
  writeFileSync(`${file}.tmp`, `${seq}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export function forgetProgress(auditDir: string, stream: string, chain: string): void {
  rmSync(join(progressDir(auditDir, stream), chain), { force: true });
}

/** One chain's progress for one stream, saved at most every SAVE_EVERY_MS and at the end. */
export class ChainProgress {
  private savedAt = 0;
  private saved = -1;

  constructor(
    private readonly auditDir: string,
    private readonly stream: string,
    private readonly chain: string,
  ) {}

  /**
   * The chain follows the stream from its first line: said at once, so that a process killed before its
   * first save still leaves its lines to be sent (catch-up.ts).
   */
  begin(): void {
    this.save(0);
  }

  /** The stream has taken the chain through `seq`. */
  took(seq: number, now = Date.now()): void {
    if (now - this.savedAt < SAVE_EVERY_MS) return;
    this.save(seq, now);
  }

  save(seq: number, now = Date.now()): void {
    if (seq === this.saved) return;
    try {
      saveProgress(this.auditDir, this.stream, this.chain, seq);
      this.saved = seq;
      this.savedAt = now;
    } catch {
      // The audit directory unwritable: the chain's own writes fail loudly; the next save tries again.
    }
  }
}
