/**
 * `coffer audit archive --before DATE --to DIR`: moves whole audit files whose every entry is older than
 * DATE out of the audit directory, after checking the whole log, and records what it moved in the log
 * itself — an `audit.archive` event in a short chain of its own, closed by a keyed checkpoint — so that
 * `coffer audit verify` still passes without them and says what was archived (audit/verify.ts).
 *
 * Only finished files move: a chain's earlier files, and its last one once the chain has ended (a clean
 * `server.stop`, or its process is gone). Each chain gives up a prefix of its files, so what remains still
 * follows on from the last archived entry. Copies are written and synced, and checked against their SHA-256,
 * before the event is recorded; the originals are removed only after that.
 */

import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  copyFileSync,
  fsyncSync,
  openSync,
  readFileSync,
  unlinkSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { processRuns } from '../processes.js';
import type { ChainKeys } from './chain-keys.js';
import { digestAfter, GENESIS, lineHash, linkOf } from './entry.js';
import { type ChainFile, chainFiles } from './files.js';
import type { ArchivedFile } from './verify-chain.js';

export interface ArchiveCandidate extends ArchivedFile {
  readonly path: string;
}

/** How a chain links its lines: the `prev` after a line, and the running digest (format 2). */
interface Linking {
  readonly format: 1 | 2;
  readonly keys: ChainKeys;
  /** The digest through the lines before the file being described. */
  digest: string;
}

function describe(
  file: ChainFile,
  chain: string,
  linking: Linking,
): ArchiveCandidate & { readonly ended: boolean } {
  const text = readFileSync(file.path, 'utf8');
  const lines = text.split('\n').filter(Boolean);
  if (linking.format === 2)
    for (const line of lines) linking.digest = digestAfter(linking.digest, line);
  const last = lines.at(-1);
  const parsed = lines.map(
    (l) => JSON.parse(l) as { seq: number; ts?: string; kind: string; event?: string },
  );
  const entries = parsed.filter((e) => e.kind !== 'checkpoint');
  const stamps = parsed
    .map((e) => e.ts)
    .filter((t): t is string => typeof t === 'string')
    .sort();
  const [beforeLast, lastEntry] = [parsed.at(-2), parsed.at(-1)];
  return {
    path: file.path,
    name: basename(file.path),
    chain,
    file: file.number,
    first_seq: parsed[0]?.seq ?? 0,
    last_seq: lastEntry?.seq ?? 0,
    last_hash:
      last === undefined
        ? ''
        : linking.format === 1
          ? lineHash(last)
          : linkOf(linking.keys.link!, last),
    ...(linking.format === 2 ? { last_digest: linking.digest } : {}),
    entries: entries.length,
    first_ts: stamps[0] ?? null,
    last_ts: stamps.at(-1) ?? null,
    sha256: createHash('sha256').update(text).digest('hex'),
    // A clean shutdown ends a chain with server.stop and a final checkpoint.
    ended:
      lastEntry?.kind === 'checkpoint' &&
      beforeLast?.kind === 'event' &&
      beforeLast.event === 'server.stop',
  };
}

/** The process that writes chain `<time>-<pid>-<random>`, if it still runs on this host. */
function chainProcessRuns(chain: string): boolean {
  const pid = Number(chain.split('-')[1]);
  return pid !== process.pid && processRuns(pid);
}

/**
 * The files to archive: per chain, the finished files from the first on whose entries are all before
 * `before`. `formatOf` says how each chain links its lines (the store's record of it), `keys` link them.
 */
export function planArchive(
  paths: readonly string[],
  before: string,
  keys: ChainKeys,
  formatOf: (chain: string) => 1 | 2,
): ArchiveCandidate[] {
  const plan: ArchiveCandidate[] = [];
  for (const [chain, files] of chainFiles(paths)) {
    if (files[0]!.number !== 1) continue; // already partly archived: continue after the archived part
    const linking: Linking = { format: formatOf(chain), keys, digest: GENESIS };
    for (const [index, file] of files.entries()) {
      const described = describe(file, chain, linking);
      const isLast = index === files.length - 1;
      const finished = !isLast || described.ended || !chainProcessRuns(chain);
      if (!finished || described.last_ts === null || described.last_ts >= before) break;
      const { ended: _ended, ...candidate } = described;
      plan.push(candidate);
    }
  }
  return plan;
}

function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Copies each file to `to` (never over an existing one), synced and checked against its SHA-256. */
export function copyArchive(plan: readonly ArchiveCandidate[], to: string): void {
  for (const file of plan) {
    const target = join(to, file.name);
    copyFileSync(file.path, target, constants.COPYFILE_EXCL);
    syncPath(target);
    const copied = createHash('sha256').update(readFileSync(target)).digest('hex');
    if (copied !== file.sha256)
      throw new Error(
        `the copy of ${file.name} in ${to} differs from the original; nothing was archived`,
      );
  }
  syncPath(to);
}

/** Removes the originals once the archive is recorded. */
export function removeArchived(plan: readonly ArchiveCandidate[], dir: string): void {
  for (const file of plan) unlinkSync(file.path);
  syncPath(dir);
}

/** What the `audit.archive` event records of each file (not where it was). */
export function archivedFields(plan: readonly ArchiveCandidate[]): ArchivedFile[] {
  return plan.map(({ path: _path, ...file }) => file);
}
