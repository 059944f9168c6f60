/**
 * What an audit stream's copy proves by itself: which of its lines the server wrote. A syslog port takes
 * lines from anyone who reaches it, so the copy may hold lines nobody signed — added, changed, or a second
 * line for an entry — and a line the server wrote is recognised by what only the server can make:
 *
 *   signed    a checkpoint whose Ed25519 signature verifies (the public key), and every line before it in
 *             its chain whose running digest reaches the checkpoint's (`digest`, audit/entry.ts). Where the
 *             copy holds two lines for one entry, each way through them is tried: the way the signature
 *             covers is the server's, the other lines are the copy's.
 *   linked    with the link key (the master key): a line whose HMAC some line after it names as its `prev`
 *             (nobody without the key computes it), and, where no line of that entry is signed or named so,
 *             a line whose own `prev` follows a line the server wrote — a chain's newest line, which nothing
 *             follows yet. A line that follows nothing the server wrote is the copy's.
 *
 * Without the link key, a line under no verified checkpoint proves nothing either way (`unsigned`).
 * Nothing the copy holds besides can make a line the server wrote drop out of the evidence: a forged line
 * is reported beside it, never instead of it.
 */
import { readFileSync } from 'node:fs';
import { digestAfter, GENESIS, linkOf, signatureMatches } from './entry.js';

/** A shipped line and the fields this reads of it. */
export interface ShippedLine {
  readonly line: string;
  readonly entry: Readonly<Record<string, unknown>>;
}

/** Each chain's shipped lines by seq: every different line received for that entry, in order received. */
export type ShippedCopy = Map<string, Map<number, ShippedLine[]>>;

export interface CopyProblem {
  readonly chain: string;
  readonly seq: number;
  readonly reason: string;
}

/** One chain of the copy, weighed. */
export interface WeighedChain {
  /** The lines the server wrote, by seq (more than one only where the copy cannot tell which). */
  readonly written: Map<number, readonly string[]>;
  /** Lines that prove nothing (no link key, under no verified checkpoint), by seq. */
  readonly unsigned: Map<number, readonly string[]>;
  /** Lines the server did not write, and checkpoints that do not verify: the copy's fault. */
  readonly forged: CopyProblem[];
  /** Entries (not checkpoints) under a checkpoint whose signature and digest verified. */
  readonly signed: number;
}

/** Ways through conflicting lines tried at once, at most; a copy with more is judged on the first ones. */
const MAX_WAYS = 64;

/** Reads the shipped files: each line's JSON from its first `{`; lines holding no audit entry are counted. */
export function readShipped(paths: readonly string[]): { copy: ShippedCopy; skipped: number } {
  const copy: ShippedCopy = new Map();
  let skipped = 0;
  for (const path of paths)
    for (const raw of readFileSync(path, 'utf8').split('\n')) {
      const start = raw.indexOf('{');
      const line = start < 0 ? '' : raw.slice(start).trimEnd();
      const entry = line === '' ? undefined : entryOf(line);
      if (entry === undefined) {
        if (raw.trim() !== '') skipped++;
        continue;
      }
      const chain = copy.get(entry.chain as string) ?? new Map<number, ShippedLine[]>();
      copy.set(entry.chain as string, chain);
      const seen = chain.get(entry.seq as number) ?? [];
      // A line received twice (a stream sends again what a broken connection may have lost) counts once.
      if (!seen.some((s) => s.line === line)) seen.push({ line, entry });
      chain.set(entry.seq as number, seen);
    }
  return { copy, skipped };
}

/** The line's entry when it is an audit entry (a chain and a seq), else undefined. */
export function entryOf(line: string): Record<string, unknown> | undefined {
  try {
    const entry = JSON.parse(line) as Record<string, unknown>;
    if (typeof entry.chain !== 'string' || !Number.isSafeInteger(entry.seq)) return undefined;
    if ((entry.seq as number) < 1) return undefined;
    return entry;
  } catch {
    return undefined;
  }
}

function signatureHolds(chain: string, seq: number, e: ShippedLine['entry'], key: Uint8Array) {
  return (
    e.kind === 'checkpoint' &&
    typeof e.digest === 'string' &&
    typeof e.ts === 'string' &&
    typeof e.prev === 'string' &&
    signatureMatches(key, { chain, seq, ts: e.ts, prev: e.prev, digest: e.digest }, e.sig)
  );
}

/** A way through the copy since its last verified point: the running digest, and the lines it took. */
interface Way {
  readonly digest: string;
  readonly took:
    | { readonly seq: number; readonly line: string; readonly before?: Way['took'] }
    | undefined;
}

/**
 * The lines of one chain that its verified checkpoints cover, and the checkpoints whose signature holds
 * (whatever the lines before them): both are the server's.
 */
function signedLines(
  chain: string,
  lines: Map<number, ShippedLine[]>,
  publicKey: Uint8Array,
): {
  covered: Map<number, Set<string>>;
  checkpoints: Map<number, Set<string>>;
  signed: number;
  bad: CopyProblem[];
} {
  const covered = new Map<number, Set<string>>();
  const checkpoints = new Map<number, Set<string>>();
  const bad: CopyProblem[] = [];
  let signed = 0;
  let ways: Way[] | null = null;
  let at = 0;
  for (const seq of [...lines.keys()].sort((a, b) => a - b)) {
    // A chain's first line follows GENESIS; after a gap in the copy the digest is unknown.
    if (seq === 1) ways = [{ digest: GENESIS, took: undefined }];
    else if (seq !== at + 1) ways = null;
    at = seq;
    const here = lines.get(seq)!;
    const holding = here.filter((s) => signatureHolds(chain, seq, s.entry, publicKey));
    for (const s of here)
      if (s.entry.kind === 'checkpoint' && !holding.includes(s))
        bad.push({
          chain,
          seq,
          reason:
            "a checkpoint whose signature does not verify: the server did not sign it (or the key is not this store's)",
        });
    if (holding.length > 0) {
      for (const cp of holding) {
        const set = checkpoints.get(seq) ?? new Set<string>();
        checkpoints.set(seq, set.add(cp.line));
        const way = ways?.find((w) => w.digest === cp.entry.digest);
        if (way === undefined) {
          if (ways !== null)
            bad.push({
              chain,
              seq,
              reason:
                'the shipped entries before this shipped checkpoint are not the ones it signed: the shipped copy was added to or changed',
            });
          continue;
        }
        covered.set(seq, (covered.get(seq) ?? new Set()).add(cp.line));
        for (let t = way.took; t !== undefined; t = t.before) {
          const was = covered.get(t.seq) ?? new Set<string>();
          if (
            !was.has(t.line) &&
            lines.get(t.seq)?.find((s) => s.line === t.line)?.entry.kind !== 'checkpoint'
          )
            signed++;
          covered.set(t.seq, was.add(t.line));
        }
      }
      // From a signed checkpoint on, its own digest is known, whatever came before it in the copy.
      ways = holding.map((cp) => ({
        digest: digestAfter(cp.entry.digest as string, cp.line),
        took: undefined,
      }));
      continue;
    }
    if (ways === null) continue;
    const next: Way[] = [];
    for (const way of ways)
      for (const s of here)
        if (next.length < MAX_WAYS)
          next.push({
            digest: digestAfter(way.digest, s.line),
            took: { seq, line: s.line, before: way.took },
          });
    ways = next;
  }
  return { covered, checkpoints, signed, bad };
}

/**
 * Weighs one chain of the copy: which lines the server wrote (signed, or linked with `link`), which the
 * copy holds that it did not, and (without `link`) which prove nothing. `local` is the local log's line at
 * a seq, when it has one: its `prev` names a line's HMAC as a shipped line's would.
 */
export function weighChain(
  chain: string,
  lines: Map<number, ShippedLine[]>,
  keys: { readonly publicKey: Uint8Array; readonly link?: Uint8Array | undefined },
  local: (seq: number) => string | undefined,
): WeighedChain {
  const { covered, checkpoints, signed, bad } = signedLines(chain, lines, keys.publicKey);
  const written = new Map<number, readonly string[]>();
  const unsigned = new Map<number, readonly string[]>();
  const forged: CopyProblem[] = [...bad];
  const link = keys.link;
  const prevOf = (line: string | undefined): string | undefined => {
    if (line === undefined) return undefined;
    const prev = entryOf(line)?.prev;
    return typeof prev === 'string' ? prev : undefined;
  };
  for (const seq of [...lines.keys()].sort((a, b) => a - b)) {
    const here = lines
      .get(seq)!
      .filter((s) => s.entry.kind !== 'checkpoint' || checkpoints.get(seq)?.has(s.line));
    let strong = here.filter((s) => covered.get(seq)?.has(s.line));
    let weak = here.filter((s) => checkpoints.get(seq)?.has(s.line) && !strong.includes(s));
    if (link !== undefined) {
      // Named by a line after it (shipped or local): the server computed its HMAC.
      const named = new Set([
        ...(lines.get(seq + 1) ?? []).map((s) => s.entry.prev),
        prevOf(local(seq + 1)),
      ]);
      strong = [
        ...strong,
        ...here.filter((s) => !strong.includes(s) && named.has(linkOf(link, s.line))),
      ];
      // Following a line the server wrote (not the first line, whose prev anyone can write).
      if (seq > 1) {
        const before = [...(written.get(seq - 1) ?? []), local(seq - 1)].filter(
          (l) => l !== undefined,
        );
        const follows = new Set(before.map((l) => linkOf(link, l)));
        weak = [
          ...weak,
          ...here.filter(
            (s) => !strong.includes(s) && !weak.includes(s) && follows.has(s.entry.prev as string),
          ),
        ];
      }
    }
    const server = strong.length > 0 ? strong : weak;
    if (server.length > 0)
      written.set(
        seq,
        server.map((s) => s.line),
      );
    const others = here.filter((s) => !server.includes(s));
    if (others.length === 0) continue;
    // Without the link key, lines of an entry nothing signs prove nothing either way.
    if (link === undefined && server.length === 0)
      unsigned.set(
        seq,
        others.map((s) => s.line),
      );
    // Two lines for one entry, or (with the link key) a line that follows nothing: the copy's fault.
    if (link !== undefined || server.length > 0 || others.length > 1)
      forged.push({
        chain,
        seq,
        reason:
          server.length > 0
            ? `the shipped copy holds ${others.length === 1 ? 'a line' : `${others.length} lines`} for this entry besides the one the server ${covered.get(seq) ? 'signed' : 'wrote'}: someone else sent ${others.length === 1 ? 'it' : 'them'} to the stream`
            : link !== undefined
              ? seq === 1
                ? 'a line the server did not write: no checkpoint signs it and no line after it links to it: someone else sent it to the stream'
                : 'a line the server did not write: it follows no line of the chain (its prev is not the link to the line before): someone else sent it to the stream'
              : 'the shipped copy holds different lines for this entry, none under a verified checkpoint: someone else sent at least one of them to the stream',
      });
  }
  return { written, unsigned, forged, signed };
}
