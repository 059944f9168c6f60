/**
 * The audit directory's files: `audit-<chain>-<n>.jsonl`, one chain per server process, n = 1, 2, … as the
 * chain moves on to a new file (audit/writer.ts). On shared storage the same files are also kept in the
 * store (audit/database-copy.ts), so a chain whose files are on another host can be read here too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const FILE_NAME = /^audit-([A-Za-z0-9-]+)-([1-9][0-9]*)\.jsonl$/;

export interface ChainFile {
  /** The file's path; for a file read from the store, `database:` and its name. */
  readonly path: string;
  readonly chain: string;
  readonly number: number;
  /** The file's content when it was read from the store; absent for a file on disk. */
  readonly text?: string;
}

/** Every audit file in `dir`. */
export function auditFilesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => FILE_NAME.test(name))
    .map((name) => join(dir, name));
}

/** The content of an audit file, on disk or from the store. */
export function chainFileText(file: ChainFile): string {
  return file.text ?? readFileSync(file.path, 'utf8');
}

/**
 * Groups audit files by chain, in file order. Names that are not audit files are refused. `stored` (files
 * the store keeps) adds the chains none of `paths` belongs to: a chain on disk here is read from its files.
 */
export function chainFiles(
  paths: readonly string[],
  stored: readonly ChainFile[] = [],
): Map<string, ChainFile[]> {
  const chains = new Map<string, ChainFile[]>();
  for (const path of paths) {
    const match = FILE_NAME.exec(basename(path));
    if (!match) throw new Error(`${path} is not an audit file (audit-<chain>-<n>.jsonl)`);
    const list = chains.get(match[1]!) ?? [];
    list.push({ path, chain: match[1]!, number: Number(match[2]) });
    chains.set(match[1]!, list);
  }
  const local = new Set(chains.keys());
  for (const file of stored) {
    if (local.has(file.chain)) continue;
    chains.set(file.chain, [...(chains.get(file.chain) ?? []), file]);
  }
  for (const list of chains.values()) list.sort((a, b) => a.number - b.number);
  return chains;
}
