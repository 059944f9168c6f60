/**
 * On shared storage, a chain of this host's against the store's copy of it (audit/database-copy.ts). The
 * files are the chain's home; the copy is what every other host verifies. A copy may trail its files only
 * while its server runs (a batch in flight) or after it was killed (lines in the file, not yet stored,
 * until the next start on the host stores them and closes the chain). A copy that ends before the files
 * of a chain that ended — its store record says so, or its files end as a clean stop ends them, with
 * `server.stop` and the final checkpoint — was cut in the store: a database administrator who deletes a
 * server's later lines and puts its chain record back, so that other hosts verify a shorter chain. Said
 * here, on the host whose files still hold them.
 */
import type { ChainRecord } from '../store/audit-records.js';
import type { StoredChains } from './database-copy.js';
import { type ChainFile, chainFiles, chainFileText } from './files.js';
import { type Broken, broken } from './verify-chain.js';

/**
 * The last two entries of a chain's files (kind, event, batch), as far as they can be read: only its end
 * is needed here (verify reads every line anyway).
 */
function tail(
  files: readonly ChainFile[],
): { seq: number; kind?: string; event?: string; batch?: boolean }[] {
  const last = files.at(-1);
  if (last === undefined) return [];
  const lines = chainFileText(last)
    .split('\n')
    .filter((line) => line !== '')
    .slice(-2);
  return lines.flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return []; // verify reports a line that does not parse
    }
  });
}

/** Whether the files end as a clean stop ends a chain: `server.stop`, then the final checkpoint. */
function endedCleanly(
  list: readonly { kind?: string; event?: string; batch?: boolean }[],
): boolean {
  const [before, last] = list.slice(-2);
  return last?.kind === 'checkpoint' && last.batch !== true && before?.event === 'server.stop';
}

/** The first chain of `paths` whose store copy was cut though the chain ended; null when none. */
export function copyBehindFiles(
  paths: readonly string[],
  stored: StoredChains,
  registry: readonly ChainRecord[] | null,
): Broken | null {
  const copies = chainFiles([], stored.files);
  for (const [chain, files] of chainFiles(paths)) {
    const copy = copies.get(chain);
    if (!copy) continue;
    const local = tail(files);
    const copied = tail(copy);
    const localEnd = local.at(-1)?.seq ?? 0;
    const copyEnd = copied.at(-1)?.seq ?? 0;
    if (copyEnd >= localEnd) continue;
    // A chain still being written (or killed, until a start on its host completes the copy) may trail.
    const record = registry?.find((r) => r.chain === chain);
    if (!record?.closed && !endedCleanly(local)) continue;
    return broken(
      copy.at(-1)!.path,
      0,
      copyEnd + 1,
      `the store's copy of chain ${chain} ends at seq ${copyEnd}, but its files here go on to seq ${localEnd}, and the chain ended${record?.closed ? '' : ' (a clean stop, which its store record no longer says)'}: the store's copy was cut, and its record put back — what other hosts verify is shorter than what this chain wrote`,
    );
  }
  return null;
}
