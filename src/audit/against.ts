/**
 * The local log held against the copy an audit stream shipped (`coffer audit verify --against FILE…`).
 * The shipped copy lives where the data directory's writer cannot reach, so it anchors the log against
 * someone who cuts, deletes or puts back local history — with or without the master key: every line the
 * server wrote that the stream has must still be in the local log, unchanged, at its place in its chain.
 * Lines the local log has beyond the shipped copy are the stream's lag, not a fault.
 *
 * Which shipped lines the server wrote is the copy's own question (audit/shipped-copy.ts): signed by a
 * checkpoint, or linked with the master key. A line the server did not write is the copy's fault, reported
 * beside the verdict on the local log and never instead of it; without the master key, a line under no
 * verified checkpoint that the local log lacks is reported as proving nothing by itself.
 *
 * A shipped file is NDJSON (an HTTP receiver's, `stdout:` collected) or a syslog file: each line's JSON
 * starts at its first `{` (rsyslog's own header before it is passed over); lines that hold no audit entry
 * are counted and passed over. A line received twice counts once.
 */

import { type ChainFile, chainFileText } from './files.js';
import { entryOf, readShipped, type WeighedChain, weighChain } from './shipped-copy.js';

export interface AgainstProblem {
  readonly chain: string;
  /** The first seq the problem is about. */
  readonly seq: number;
  readonly reason: string;
  /**
   * Whose fault: the local log's (`local`: cut, changed, deleted — the server's own lines say so), the
   * shipped copy's (`shipped`: lines the server did not write), or undecided (`unsigned`: the local log
   * lacks or differs from shipped lines that nothing here proves the server wrote).
   */
  readonly in: 'local' | 'shipped' | 'unsigned';
}

export interface AgainstResult {
  readonly intact: boolean;
  /** Distinct shipped entries read, and the lines passed over as not audit entries. */
  readonly shipped: number;
  readonly skipped: number;
  readonly chains: number;
  /** Per chain, the first local fault and the first undecided line; every fault of the copy. */
  readonly problems: readonly AgainstProblem[];
  /** Chains whose local log goes on past the shipped copy (the stream's lag): entries not yet shipped. */
  readonly unshipped: number;
  /** Shipped entries under a shipped checkpoint whose signature and digest verified. */
  readonly signed: number;
  /** Shipped entries older than their chain's oldest local file, which was archived. */
  readonly archived: number;
}

/** The local lines of one chain by seq, from its files (on disk here, or the store's copy). */
function localLines(files: readonly ChainFile[]): Map<number, string> {
  const lines = new Map<number, string>();
  for (const file of files)
    for (const line of chainFileText(file).split('\n')) {
      const entry = line === '' ? undefined : entryOf(line);
      if (entry) lines.set(entry.seq as number, line);
    }
  return lines;
}

/** How one chain's local log stands against what the copy says of it. */
function judgeChain(
  chain: string,
  weighed: WeighedChain,
  shippedEnd: number,
  files: readonly ChainFile[] | undefined,
  held: ReadonlyMap<number, string>,
): { problems: AgainstProblem[]; unshipped: number; archived: number } {
  const written = [...weighed.written.keys()].sort((a, b) => a - b);
  const unsigned = [...weighed.unsigned.keys()].sort((a, b) => a - b);
  if (!files || files.length === 0) {
    if (written.length > 0)
      return {
        problems: [
          {
            chain,
            seq: written[0]!,
            reason: `the local log has no file of this chain, which the stream shipped through seq ${shippedEnd}: the chain was deleted`,
            in: 'local',
          },
        ],
        unshipped: 0,
        archived: 0,
      };
    if (unsigned.length === 0) return { problems: [], unshipped: 0, archived: 0 };
    return {
      problems: [
        {
          chain,
          seq: unsigned[0]!,
          reason:
            'the local log has no file of this chain, and no shipped line of it is under a verified checkpoint: the chain was deleted before its first checkpoint, or someone else sent these lines to the stream (with the master key, verify checks their links and tells)',
          in: 'unsigned',
        },
      ],
      unshipped: 0,
      archived: 0,
    };
  }
  const seqs = [...held.keys()];
  const oldest = Math.min(...seqs);
  const newest = Math.max(...seqs);
  // Lines before the oldest local one were archived only where the chain's first file is gone (verify
  // accounts for archived files by their records); a first file that lost its first lines was cut.
  const archivedBefore = files[0]!.number > 1 ? oldest : 1;
  const problems: AgainstProblem[] = [];
  let archived = 0;
  for (const seq of written) {
    const line = held.get(seq);
    if (line !== undefined && weighed.written.get(seq)!.includes(line)) continue;
    if (line === undefined && seq < archivedBefore) {
      archived++;
      continue;
    }
    const missing = written.filter((s) => s >= seq && !held.has(s)).length;
    problems.push({
      chain,
      seq,
      reason:
        line === undefined
          ? `missing from the local log, which the stream shipped as the server wrote it (${missing} such entries from here on are missing, the chain's shipped end is seq ${shippedEnd}): the log was cut, or an older copy put back`
          : 'differs from the line the server wrote, as the stream shipped it: the entry was changed',
      in: 'local',
    });
    break;
  }
  // The newest local checkpoint that the copy shows the server signed: the lines before it are the signed
  // ones wherever the local log holds them (verify checks their digest).
  const signedThrough = Math.max(
    0,
    ...written.filter((s) => {
      const line = held.get(s);
      return (
        line !== undefined &&
        weighed.written.get(s)!.includes(line) &&
        entryOf(line)?.kind === 'checkpoint'
      );
    }),
  );
  for (const seq of unsigned) {
    const line = held.get(seq);
    if (line !== undefined && weighed.unsigned.get(seq)!.includes(line)) continue;
    if (line === undefined && seq < archivedBefore) continue;
    problems.push(
      line !== undefined && seq < signedThrough
        ? {
            chain,
            seq,
            reason: `differs from the local line, which the server signed (the checkpoint at seq ${signedThrough}, in both): someone else sent the shipped line to the stream`,
            in: 'shipped',
          }
        : {
            chain,
            seq,
            reason: `${line === undefined ? 'missing from the local log' : 'differs from the local line'}; the shipped line is under no verified checkpoint, so it proves nothing by itself: the log was cut or changed after its last checkpoint, or someone else sent the line to the stream (with the master key, verify checks its link and tells)`,
            in: 'unsigned',
          },
    );
    break;
  }
  return { problems, unshipped: Math.max(0, newest - shippedEnd), archived };
}

/**
 * Holds the shipped copy against `local` (every chain of the log, as verify reads it), with the public key
 * and, when verify has the master key, the link key.
 */
export function compareAgainst(
  local: ReadonlyMap<string, readonly ChainFile[]>,
  paths: readonly string[],
  keys: { readonly publicKey: Uint8Array; readonly link?: Uint8Array | undefined },
): AgainstResult {
  const { copy, skipped } = readShipped(paths);
  const problems: AgainstProblem[] = [];
  let entries = 0;
  let unshipped = 0;
  let signed = 0;
  let archived = 0;
  for (const [chain, lines] of copy) {
    entries += lines.size;
    const files = local.get(chain);
    const held = files && files.length > 0 ? localLines(files) : new Map<number, string>();
    const weighed = weighChain(chain, lines, keys, (seq) => held.get(seq));
    signed += weighed.signed;
    problems.push(...weighed.forged.map((p) => ({ ...p, in: 'shipped' as const })));
    const judged = judgeChain(chain, weighed, Math.max(...lines.keys()), files, held);
    problems.push(...judged.problems);
    unshipped += judged.unshipped;
    archived += judged.archived;
  }
  return {
    intact: problems.length === 0 && entries > 0,
    shipped: entries,
    skipped,
    chains: copy.size,
    problems,
    unshipped,
    signed,
    archived,
  };
}
