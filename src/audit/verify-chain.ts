/**
 * Verifying one audit chain's files (audit/entry.ts gives the two formats): every line's seq, its link to
 * the line before it (with the link key), each checkpoint — its signature and the digest of the lines it
 * covers (format 2; any auditor with the public key), or its MAC (format 1; the master key's) — and where
 * the newest checkpoint is. What the chain's end must look like (closed, live, recorded) is the whole
 * log's business (audit/verify.ts).
 */
import type { ChainKeys } from './chain-keys.js';
import { digestAfter, GENESIS, lineHash, linkOf, macMatches, signatureMatches } from './entry.js';
import { type ChainFile, chainFileText } from './files.js';

/** One archived file, as an `audit.archive` event records it. */
export interface ArchivedFile {
  readonly name: string;
  readonly chain: string;
  readonly file: number;
  readonly first_seq: number;
  readonly last_seq: number;
  /** The `prev` of the entry that follows the file's last line (its link; format 1: its SHA-256). */
  readonly last_hash: string;
  /** Format 2: the running digest through the file's last line. */
  readonly last_digest?: string;
  readonly entries: number;
  readonly first_ts: string | null;
  readonly last_ts: string | null;
  readonly sha256: string;
}

export interface Broken {
  readonly intact: false;
  readonly file: string;
  readonly line: number;
  readonly seq: number | null;
  readonly reason: string;
}

export const broken = (file: string, line: number, seq: number | null, reason: string): Broken => ({
  intact: false,
  file,
  line,
  seq,
  reason,
});

/** Where a chain's files begin: its first line, or the line after its archived files. */
export interface Start {
  readonly seq: number;
  readonly prev: string;
  readonly digest: string;
  readonly file: number;
}

export const CHAIN_START: Start = { seq: 0, prev: GENESIS, digest: GENESIS, file: 1 };

/** What a chain's files hold, once verified. */
export interface ChainResult {
  readonly entries: number;
  readonly first: string | null;
  readonly last: string | null;
  /** The newest checkpoint in the files (null: none). */
  readonly checkpoint: { readonly seq: number; readonly hash: string } | null;
  /** The lines after it: how many, and the first one's seq, time and place. */
  readonly tail: {
    readonly entries: number;
    readonly seq: number | null;
    readonly ts: string | null;
    readonly file: string;
    readonly line: number;
  };
  /** The last line: its seq, the link to it, the digest through it, and where it is. */
  readonly end: {
    readonly seq: number;
    readonly hash: string;
    readonly digest: string;
    readonly file: string;
    readonly line: number;
  };
  /** Archive events of this chain covered by a checkpoint that verified. */
  readonly archives: { readonly to: string; readonly files: ArchivedFile[] }[];
  /** The chains this one closed (`audit.chain_closed`): where each ended, as the closing start found it. */
  readonly closings: { readonly chain: string; readonly seq: number; readonly link: string }[];
}

/**
 * Verifies `files` (one chain's, in order) from `start`. `format` 2 checks links with `keys.link` when
 * given and checkpoints by signature; format 1 checks plain hashes and checkpoint MACs (`keys.legacy`).
 */
export function verifyChain(
  chain: string,
  files: readonly ChainFile[],
  start: Start,
  format: 1 | 2,
  keys: ChainKeys,
): ChainResult | Broken {
  if (format === 1 && keys.legacy === undefined)
    return broken(
      files[0]?.path ?? `audit-${chain}-1.jsonl`,
      0,
      null,
      `chain ${chain} was written before checkpoints were signed (audit format 1): only the master key verifies it`,
    );
  let seq = start.seq;
  let prev = start.prev;
  let digest = start.digest;
  let checkpoint: ChainResult['checkpoint'] = null;
  let tail: { entries: number; seq: number | null; ts: string | null; file: string; line: number } =
    { entries: 0, seq: null, ts: null, file: files[0]?.path ?? '', line: 0 };
  let end = { seq: start.seq, hash: start.prev, digest: start.digest, file: '', line: 0 };
  let entries = 0;
  let first: string | null = null;
  let last: string | null = null;
  let pendingArchives: ChainResult['archives'][number][] = [];
  const archives: ChainResult['archives'][number][] = [];
  const closings: ChainResult['closings'][number][] = [];
  /** Format 2's checkpoints, their signatures checked once the chain is read (firstBadSignature). */
  const signed: SignedCheckpoint[] = [];
  for (const [index, file] of files.entries()) {
    if (file.number !== start.file + index)
      return broken(
        file.path,
        0,
        null,
        `file ${start.file + index} of chain ${chain} is missing${start.file > 1 ? '' : ' (and no archive records it)'}`,
      );
    const lines = chainFileText(file).split('\n');
    if (lines.at(-1) === '') lines.pop();
    else if (lines.length > 0)
      return broken(file.path, lines.length, null, 'the last line is cut short (no newline)');
    for (const [i, line] of lines.entries()) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return broken(file.path, i + 1, null, 'not a JSON line');
      }
      const at = typeof entry.seq === 'number' ? entry.seq : null;
      if (entry.chain !== chain)
        return broken(
          file.path,
          i + 1,
          at,
          `belongs to chain ${String(entry.chain)}, not ${chain}`,
        );
      if (at !== seq + 1)
        return broken(
          file.path,
          i + 1,
          at,
          `expected seq ${seq + 1}: an entry was deleted, inserted or moved`,
        );
      const linkChecked = format === 1 || keys.link !== undefined;
      if (linkChecked && entry.prev !== prev)
        return broken(
          file.path,
          i + 1,
          at,
          `does not follow the entry before it (seq ${seq}): that entry was altered, or an entry was deleted, inserted or moved`,
        );
      if (entry.kind === 'checkpoint' && format === 2 && 'mac' in entry && !('sig' in entry))
        return broken(
          file.path,
          i + 1,
          at,
          `chain ${chain} was written before checkpoints were signed (audit format 1): only the master key verifies it`,
        );
      if (entry.kind === 'checkpoint') {
        if (format === 1 && !macMatches(keys.legacy!, chain, at, prev, entry.mac))
          return broken(file.path, i + 1, at, BAD_MAC);
        if (format === 2) {
          if (
            entry.digest !== digest ||
            typeof entry.ts !== 'string' ||
            typeof entry.prev !== 'string'
          )
            return broken(file.path, i + 1, at, BAD_SIGNATURE);
          const checkpoint = { chain, seq: at, ts: entry.ts, prev: entry.prev, digest };
          signed.push({ file: file.path, line: i + 1, checkpoint, sig: entry.sig });
        }
        tail = { entries: 0, seq: null, ts: null, file: file.path, line: i + 1 };
        archives.push(...pendingArchives);
        pendingArchives = [];
      } else {
        if (tail.entries === 0)
          tail = {
            entries: 0,
            seq: at,
            ts: typeof entry.ts === 'string' ? entry.ts : null,
            file: file.path,
            line: i + 1,
          };
        tail.entries += 1;
        entries += 1;
        const ts = typeof entry.ts === 'string' ? entry.ts : null;
        if (ts !== null && (first === null || ts < first)) first = ts;
        if (ts !== null && (last === null || ts > last)) last = ts;
        if (entry.kind === 'event' && entry.event === 'audit.archive' && Array.isArray(entry.files))
          pendingArchives.push({ to: String(entry.to), files: entry.files as ArchivedFile[] });
        if (
          entry.kind === 'event' &&
          entry.event === 'audit.chain_closed' &&
          typeof entry.closed_chain === 'string' &&
          typeof entry.closed_seq === 'number'
        )
          closings.push({
            chain: entry.closed_chain,
            seq: entry.closed_seq,
            link: typeof entry.closed_link === 'string' ? entry.closed_link : '',
          });
      }
      seq = at;
      prev = format === 1 ? lineHash(line) : keys.link ? linkOf(keys.link, line) : '';
      digest = format === 1 ? '' : digestAfter(digest, line);
      if (entry.kind === 'checkpoint') checkpoint = { seq: at, hash: prev };
      end = { seq: at, hash: prev, digest, file: file.path, line: i + 1 };
    }
  }
  const bad = firstBadSignature(signed, keys.publicKey);
  if (bad) return broken(bad.file, bad.line, bad.checkpoint.seq, BAD_SIGNATURE);
  return { entries, first, last, checkpoint, tail, end, archives, closings };
}

const BAD_MAC =
  "the checkpoint MAC does not verify: the history up to here was rewritten, or the key is not this store's";
const BAD_SIGNATURE =
  "the checkpoint's signature does not verify over the entries before it: the history up to here was rewritten, or the public key is not this store's";

interface SignedCheckpoint {
  readonly file: string;
  readonly line: number;
  readonly checkpoint: Parameters<typeof signatureMatches>[1];
  readonly sig: unknown;
}

/**
 * The first checkpoint whose signature does not verify. Each checkpoint's digest already matched the
 * lines before it, checkpoints included, so the newest one's signature covers every line and signature
 * before it: that one alone is checked (with a stream, a chain has a checkpoint per batch, and a signature
 * takes a few hundred µs to check). Only when it fails are the others checked, to name the first.
 */
function firstBadSignature(
  signed: readonly SignedCheckpoint[],
  publicKey: Uint8Array,
): SignedCheckpoint | undefined {
  const matches = (c: SignedCheckpoint) => signatureMatches(publicKey, c.checkpoint, c.sig);
  const newest = signed.at(-1);
  if (newest === undefined || matches(newest)) return undefined;
  return signed.find((c) => !matches(c));
}
