/**
 * The local log held against the copy an audit stream shipped (`coffer audit verify --against FILE…`).
 * The shipped copy lives where the data directory's writer cannot reach, so it anchors the log against
 * someone who cuts, deletes or puts back local history — with or without the master key: every line the
 * stream has must still be in the local log, unchanged, at its place in its chain (each chain's last shipped
 * checkpoint included). Lines the local log has beyond the shipped copy are the stream's lag, not a fault.
 *
 * A shipped file is NDJSON (an HTTP receiver's, `stdout:` collected) or a syslog file: each line's JSON
 * starts at its first `{` (rsyslog's own header before it is passed over); lines that hold no audit entry
 * are counted and passed over. A line received twice (a syslog stream sends again what a broken connection
 * may have lost) counts once when both copies are the same.
 */
import { readFileSync } from 'node:fs';
import { digestAfter, GENESIS, signatureMatches } from './entry.js';
import { type ChainFile, chainFileText } from './files.js';

export interface AgainstProblem {
  readonly chain: string;
  /** The first shipped seq the local log does not hold as shipped (or, `in: 'shipped'`, that does not verify). */
  readonly seq: number;
  readonly reason: string;
  /** Whose fault: the local log's (cut, changed), or the shipped copy's own (not as the server signed it). */
  readonly in: 'local' | 'shipped';
}

export interface AgainstResult {
  readonly intact: boolean;
  /** Distinct shipped entries read, and the lines passed over as not audit entries. */
  readonly shipped: number;
  readonly skipped: number;
  readonly chains: number;
  /** At most one per chain: where it first differs. */
  readonly problems: readonly AgainstProblem[];
  /** Chains whose local log goes on past the shipped copy (the stream's lag): entries not yet shipped. */
  readonly unshipped: number;
  /** Shipped entries under a shipped checkpoint whose signature verified; the rest are under none. */
  readonly signed: number;
}

type Shipped = Map<string, Map<number, string>>;

export function readShipped(paths: readonly string[]): {
  shipped: Shipped;
  skipped: number;
  conflicts: AgainstProblem[];
} {
  const shipped: Shipped = new Map();
  const conflicts: AgainstProblem[] = [];
  let skipped = 0;
  for (const path of paths) {
    for (const raw of readFileSync(path, 'utf8').split('\n')) {
      const start = raw.indexOf('{');
      if (start < 0) {
        if (raw.trim() !== '') skipped++;
        continue;
      }
      const line = raw.slice(start).trimEnd();
      const head = entryHead(line);
      if (head === undefined) {
        skipped++;
        continue;
      }
      const chain = shipped.get(head.chain) ?? new Map<number, string>();
      shipped.set(head.chain, chain);
      const before = chain.get(head.seq);
      if (before !== undefined && before !== line)
        conflicts.push({
          chain: head.chain,
          seq: head.seq,
          reason: 'the shipped copy holds two different lines for this entry',
          in: 'shipped',
        });
      chain.set(head.seq, line);
    }
  }
  return { shipped, skipped, conflicts };
}

function entryHead(line: string): { chain: string; seq: number } | undefined {
  try {
    const entry = JSON.parse(line) as { seq?: unknown; chain?: unknown };
    if (typeof entry.chain !== 'string' || !Number.isSafeInteger(entry.seq)) return undefined;
    return { chain: entry.chain, seq: entry.seq as number };
  } catch {
    return undefined;
  }
}

/** The local lines of one chain by seq, from its files (on disk here, or the store's copy). */
function localLines(files: readonly ChainFile[]): Map<number, string> {
  const lines = new Map<number, string>();
  for (const file of files)
    for (const line of chainFileText(file).split('\n')) {
      const head = line === '' ? undefined : entryHead(line);
      if (head) lines.set(head.seq, line);
    }
  return lines;
}

/**
 * Holds the shipped copy against `local` (every chain of the log, as verify reads it). A chain's shipped
 * entries older than its oldest local line, where that line is not the chain's first, were archived
 * (verify itself reports a file missing without its archive record).
 */
export function compareAgainst(
  local: ReadonlyMap<string, readonly ChainFile[]>,
  paths: readonly string[],
  publicKey: Uint8Array,
): AgainstResult {
  const { shipped, skipped, conflicts } = readShipped(paths);
  const signatures = shippedSignatures(shipped, publicKey);
  const problems: AgainstProblem[] = [...conflicts, ...signatures.problems];
  let entries = 0;
  let unshipped = 0;
  const notAsSigned = new Set(signatures.problems.map((problem) => problem.chain));
  for (const [chain, lines] of shipped) {
    entries += lines.size;
    // A chain whose shipped copy is not as the server signed it tells nothing of the local log.
    if (notAsSigned.has(chain)) continue;
    const files = local.get(chain);
    const seqs = [...lines.keys()].sort((a, b) => a - b);
    if (!files || files.length === 0) {
      problems.push({
        chain,
        seq: seqs[0]!,
        reason: `the local log has no file of this chain, which the stream shipped through seq ${seqs.at(-1)}: the chain was deleted`,
        in: 'local',
      });
      continue;
    }
    const held = localLines(files);
    const oldest = Math.min(...held.keys());
    const newest = Math.max(...held.keys());
    unshipped += Math.max(0, newest - seqs.at(-1)!);
    for (const seq of seqs) {
      const line = held.get(seq);
      if (line === lines.get(seq)) continue;
      if (line === undefined && seq < oldest && oldest > 1) continue;
      const missing = seqs.filter((s) => s >= seq && !held.has(s)).length;
      problems.push({
        chain,
        seq,
        reason:
          line === undefined
            ? `missing from the local log, which the stream shipped (${missing} shipped entries from here on are missing, the chain's shipped end is seq ${seqs.at(-1)}): the log was cut, or an older copy put back`
            : 'differs from the line the stream shipped: the entry was changed',
        in: 'local',
      });
      break;
    }
  }
  return {
    intact: problems.length === 0,
    shipped: entries,
    skipped,
    chains: shipped.size,
    problems,
    unshipped,
    signed: signatures.signed,
  };
}

/**
 * The shipped copy by itself: every shipped checkpoint's signature, and the running digest from each
 * checkpoint through the lines after it, where the copy holds them all, to the next one. Counts the
 * entries a verified checkpoint covers; the first checkpoint of a chain that does not verify is a problem.
 */
export function shippedSignatures(
  shipped: Shipped,
  publicKey: Uint8Array,
): { problems: AgainstProblem[]; signed: number } {
  const problems: AgainstProblem[] = [];
  let signed = 0;
  for (const [chain, lines] of shipped) {
    // The digest through the last line seen, while the copy holds every line since a verified point.
    let digest: string | null = null;
    let at = 0;
    let since = 0;
    for (const seq of [...lines.keys()].sort((a, b) => a - b)) {
      const line = lines.get(seq)!;
      if (seq === 1 || seq !== at + 1) {
        // A chain's first line follows GENESIS; after a gap in the copy, the digest is unknown.
        digest = seq === 1 ? GENESIS : null;
        since = 0;
      }
      at = seq;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.kind !== 'checkpoint') {
        if (digest !== null) digest = digestAfter(digest, line);
        since += 1;
        continue;
      }
      const valid =
        typeof entry.digest === 'string' &&
        typeof entry.ts === 'string' &&
        typeof entry.prev === 'string' &&
        (digest === null || digest === entry.digest) &&
        signatureMatches(
          publicKey,
          { chain, seq, ts: entry.ts, prev: entry.prev, digest: entry.digest },
          entry.sig,
        );
      if (!valid) {
        problems.push({
          chain,
          seq,
          reason:
            digest !== null && digest !== entry.digest
              ? 'the shipped entries before this shipped checkpoint are not the ones it signed: the shipped copy was added to or changed'
              : "the shipped checkpoint's signature does not verify: the shipped copy was changed, or the key is not this store's",
          in: 'shipped',
        });
        break;
      }
      // Lines after a gap in the copy (or before its first checkpoint of a chain that it holds from the
      // middle) are under no checkpoint it can check them against.
      if (digest !== null) signed += since;
      since = 0;
      digest = digestAfter(entry.digest as string, line);
    }
  }
  return { problems, signed };
}
