/**
 * Offline verification of audit files: every chain's files in order, every line's seq and prev, every
 * checkpoint's MAC, and the store's record of each chain's newest checkpoint. Stops at the first break
 * and says where and why.
 */
import { readFileSync } from 'node:fs';
import { GENESIS, lineHash, macMatches } from './entry.js';
import { chainFiles } from './files.js';
import type { ChainRecord } from './registry.js';

export type VerifyResult =
  | { readonly intact: true; readonly entries: number; readonly chains: number; readonly first: string | null; readonly last: string | null; readonly uncheckpointed: number }
  | { readonly intact: false; readonly file: string; readonly line: number; readonly seq: number | null; readonly reason: string };

export function verifyAudit(paths: readonly string[], key: Uint8Array, registry: readonly ChainRecord[]): VerifyResult {
  const chains = chainFiles(paths);
  let entries = 0;
  let uncheckpointed = 0;
  let first: string | null = null;
  let last: string | null = null;
  const broken = (file: string, line: number, seq: number | null, reason: string): VerifyResult => ({ intact: false, file, line, seq, reason });

  for (const record of registry) {
    if (!chains.has(record.chain) && record.last_checkpoint !== null) {
      return broken(`audit-${record.chain}-1.jsonl`, 0, null, `the store records chain ${record.chain} (started ${record.started_at}) but none of its files were given`);
    }
  }

  for (const [chain, files] of chains) {
    let seq = 0;
    let prev = GENESIS;
    let lastCheckpoint: { seq: number; hash: string } | null = null;
    let sinceCheckpoint = 0;
    for (const [index, file] of files.entries()) {
      if (file.number !== index + 1) return broken(file.path, 0, null, `file ${index + 1} of chain ${chain} is missing`);
      const lines = readFileSync(file.path, 'utf8').split('\n');
      if (lines.at(-1) === '') lines.pop();
      else if (lines.length > 0) return broken(file.path, lines.length, null, 'the last line is cut short (no newline)');
      for (const [i, line] of lines.entries()) {
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return broken(file.path, i + 1, null, 'not a JSON line');
        }
        const at = typeof entry.seq === 'number' ? entry.seq : null;
        if (entry.chain !== chain) return broken(file.path, i + 1, at, `belongs to chain ${String(entry.chain)}, not ${chain}`);
        if (at !== seq + 1) return broken(file.path, i + 1, at, `expected seq ${seq + 1}: an entry was deleted, inserted or moved`);
        if (entry.prev !== prev) return broken(file.path, i + 1, at, `does not follow the entry before it (seq ${seq}): that entry was altered, or an entry was deleted, inserted or moved`);
        if (entry.kind === 'checkpoint') {
          if (!macMatches(key, chain, at, prev, entry.mac)) return broken(file.path, i + 1, at, 'the checkpoint MAC does not verify: the history up to here was rewritten, or the key is not this store\'s');
          lastCheckpoint = { seq: at, hash: lineHash(line) };
          sinceCheckpoint = 0;
        } else {
          sinceCheckpoint += 1;
          entries += 1;
          const ts = typeof entry.ts === 'string' ? entry.ts : null;
          if (ts !== null && (first === null || ts < first)) first = ts;
          if (ts !== null && (last === null || ts > last)) last = ts;
        }
        seq = at;
        prev = lineHash(line);
      }
    }
    const recorded = registry.find((r) => r.chain === chain)?.last_checkpoint;
    if (recorded && (lastCheckpoint === null || lastCheckpoint.seq < recorded.seq)) {
      const lastFile = files.at(-1)!.path;
      return broken(lastFile, 0, seq, `the store records a checkpoint at seq ${recorded.seq}, but the files end at seq ${seq}: the log was truncated`);
    }
    if (recorded && lastCheckpoint && lastCheckpoint.seq === recorded.seq && lastCheckpoint.hash !== recorded.hash) {
      return broken(files.at(-1)!.path, 0, recorded.seq, 'the newest checkpoint differs from the one the store records');
    }
    uncheckpointed += sinceCheckpoint;
  }
  return { intact: true, entries, chains: chains.size, first, last, uncheckpointed };
}
