/**
 * The audit directory's files: `audit-<chain>-<n>.jsonl`, one chain per server process, n = 1, 2, … as the
 * chain moves on to a new file (audit/writer.ts).
 */
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';

const FILE_NAME = /^audit-([A-Za-z0-9-]+)-([1-9][0-9]*)\.jsonl$/;

export interface ChainFile {
  readonly path: string;
  readonly number: number;
}

/** Every audit file in `dir`. */
export function auditFilesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => FILE_NAME.test(name))
    .map((name) => join(dir, name));
}

/** Groups audit files by chain, in file order. Names that are not audit files are refused. */
export function chainFiles(paths: readonly string[]): Map<string, ChainFile[]> {
  const chains = new Map<string, ChainFile[]>();
  for (const path of paths) {
    const match = FILE_NAME.exec(basename(path));
    if (!match) throw new Error(`${path} is not an audit file (audit-<chain>-<n>.jsonl)`);
    const list = chains.get(match[1]!) ?? [];
    list.push({ path, number: Number(match[2]) });
    chains.set(match[1]!, list);
  }
  for (const list of chains.values()) list.sort((a, b) => a.number - b.number);
  return chains;
}
