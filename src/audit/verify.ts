/**
 * Offline verification of audit files: every chain's files in order, every line's seq and prev, every
 * checkpoint's MAC, and the store's record of each chain's newest checkpoint. Stops at the first break
 * and says where and why.
 *
 * Archived files (`coffer audit archive`, audit/archive.ts) are accounted for by the `audit.archive` events
 * that recorded them: a chain may then begin at file n + 1, its first entry following the last archived one
 * (seq and hash), or be archived whole. Only an archive event that a valid checkpoint covers, in a chain the
 * store knows, is believed: without the key, nobody can make files disappear by claiming they were archived.
 */
import type { StoredChains } from './database-copy.js';
import { GENESIS, lineHash, macMatches } from './entry.js';
import { type ChainFile, chainFiles, chainFileText } from './files.js';
import type { ChainRecord } from './registry.js';

/** One archived file, as an `audit.archive` event records it. */
export interface ArchivedFile {
  readonly name: string;
  readonly chain: string;
  readonly file: number;
  readonly first_seq: number;
  readonly last_seq: number;
  /** SHA-256 of the file's last line: the `prev` of the entry that follows it. */
  readonly last_hash: string;
  readonly entries: number;
  readonly first_ts: string | null;
  readonly last_ts: string | null;
  readonly sha256: string;
}

export interface ArchivedSummary {
  readonly files: number;
  readonly entries: number;
  readonly chains: number;
  readonly last_ts: string | null;
  /** Where they went, as recorded. */
  readonly to: string[];
}

export type VerifyResult =
  | {
      readonly intact: true;
      readonly entries: number;
      readonly chains: number;
      readonly first: string | null;
      readonly last: string | null;
      readonly uncheckpointed: number;
      readonly archived: ArchivedSummary;
    }
  | {
      readonly intact: false;
      readonly file: string;
      readonly line: number;
      readonly seq: number | null;
      readonly reason: string;
    };

type Broken = Extract<VerifyResult, { intact: false }>;

interface ChainResult {
  readonly entries: number;
  readonly uncheckpointed: number;
  readonly first: string | null;
  readonly last: string | null;
  /** Archive events of this chain covered by a valid checkpoint. */
  readonly archives: { readonly to: string; readonly files: ArchivedFile[] }[];
}

interface Start {
  readonly seq: number;
  readonly prev: string;
  readonly file: number;
}

const broken = (file: string, line: number, seq: number | null, reason: string): Broken => ({
  intact: false,
  file,
  line,
  seq,
  reason,
});

function verifyChain(
  chain: string,
  files: readonly ChainFile[],
  start: Start,
  key: Uint8Array,
  recorded: ChainRecord | undefined,
): ChainResult | Broken {
  let seq = start.seq;
  let prev = start.prev;
  let lastCheckpoint: { seq: number; hash: string } | null = null;
  let sinceCheckpoint = 0;
  let entries = 0;
  let first: string | null = null;
  let last: string | null = null;
  let pendingArchives: ChainResult['archives'][number][] = [];
  const archives: ChainResult['archives'][number][] = [];
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
      if (entry.prev !== prev)
        return broken(
          file.path,
          i + 1,
          at,
          `does not follow the entry before it (seq ${seq}): that entry was altered, or an entry was deleted, inserted or moved`,
        );
      if (entry.kind === 'checkpoint') {
        if (!macMatches(key, chain, at, prev, entry.mac))
          return broken(
            file.path,
            i + 1,
            at,
            "the checkpoint MAC does not verify: the history up to here was rewritten, or the key is not this store's",
          );
        lastCheckpoint = { seq: at, hash: lineHash(line) };
        sinceCheckpoint = 0;
        archives.push(...pendingArchives);
        pendingArchives = [];
      } else {
        sinceCheckpoint += 1;
        entries += 1;
        const ts = typeof entry.ts === 'string' ? entry.ts : null;
        if (ts !== null && (first === null || ts < first)) first = ts;
        if (ts !== null && (last === null || ts > last)) last = ts;
        if (
          entry.kind === 'event' &&
          entry.event === 'audit.archive' &&
          Array.isArray(entry.files)
        ) {
          pendingArchives.push({ to: String(entry.to), files: entry.files as ArchivedFile[] });
        }
      }
      seq = at;
      prev = lineHash(line);
    }
  }
  const checkpoint = recorded?.last_checkpoint;
  // A checkpoint that lies in the archived part of the chain is accounted for by the archive.
  if (
    checkpoint &&
    checkpoint.seq > start.seq &&
    (lastCheckpoint === null || lastCheckpoint.seq < checkpoint.seq)
  ) {
    return broken(
      files.at(-1)?.path ?? `audit-${chain}-${start.file}.jsonl`,
      0,
      seq,
      `the store records a checkpoint at seq ${checkpoint.seq}, but the files end at seq ${seq}: the log was truncated`,
    );
  }
  if (
    checkpoint &&
    lastCheckpoint &&
    lastCheckpoint.seq === checkpoint.seq &&
    lastCheckpoint.hash !== checkpoint.hash
  ) {
    return broken(
      files.at(-1)!.path,
      0,
      checkpoint.seq,
      'the newest checkpoint differs from the one the store records',
    );
  }
  return { entries, uncheckpointed: sinceCheckpoint, first, last, archives };
}

/**
 * Verifies the chains of `paths`, and with `stored` (shared storage: audit/database-copy.ts) every other
 * chain the store keeps: a chain whose files are on another host is verified from the store's copy.
 */
export function verifyAudit(
  paths: readonly string[],
  key: Uint8Array,
  registry: readonly ChainRecord[],
  stored?: StoredChains,
): VerifyResult {
  // The store's record of a chain that fails its integrity check vouches for nothing: a rolled-back
  // checkpoint could hide a truncated file.
  const damaged = registry.find((r) => r.damaged);
  if (damaged)
    return broken(
      `audit-${damaged.chain}-1.jsonl`,
      0,
      null,
      `the store's record of chain ${damaged.chain} failed its integrity check`,
    );
  const damagedRun = stored?.damaged[0];
  if (damagedRun)
    return broken(
      `database:audit-${damagedRun.chain}`,
      0,
      damagedRun.seq,
      `the store's copy of chain ${damagedRun.chain} from seq ${damagedRun.seq} failed its integrity check`,
    );
  const chains = chainFiles(paths, stored?.files);
  const known = new Map(registry.map((r) => [r.chain, r]));
  let [entries, uncheckpointed] = [0, 0];
  let first: string | null = null;
  let last: string | null = null;
  const add = (r: ChainResult): void => {
    entries += r.entries;
    uncheckpointed += r.uncheckpointed;
    if (r.first !== null && (first === null || r.first < first)) first = r.first;
    if (r.last !== null && (last === null || r.last > last)) last = r.last;
  };

  // Chains that begin at their first file come first: they hold the archive events the others need.
  const archived = new Map<string, ArchivedFile[]>();
  const destinations = new Set<string>();
  const later: [string, ChainFile[]][] = [];
  for (const [chain, files] of chains) {
    if (files[0]!.number !== 1) {
      later.push([chain, files]);
      continue;
    }
    const result = verifyChain(
      chain,
      files,
      { seq: 0, prev: GENESIS, file: 1 },
      key,
      known.get(chain),
    );
    if ('intact' in result) return result;
    add(result);
    if (!known.has(chain)) continue; // a chain the store never knew cannot vouch for an archive
    for (const archive of result.archives) {
      destinations.add(archive.to);
      for (const file of archive.files)
        archived.set(file.chain, [...(archived.get(file.chain) ?? []), file]);
    }
  }

  /** Where an archived chain continues: after its archived files 1..n, which must all be recorded. */
  const continuation = (chain: string): Start | null => {
    const files = [...new Map((archived.get(chain) ?? []).map((f) => [f.file, f])).values()].sort(
      (a, b) => a.file - b.file,
    );
    if (files.length === 0 || files.some((f, i) => f.file !== i + 1)) return null;
    const lastFile = files.at(-1)!;
    return { seq: lastFile.last_seq, prev: lastFile.last_hash, file: lastFile.file + 1 };
  };

  for (const [chain, files] of later) {
    const start = continuation(chain);
    if (start === null || start.file !== files[0]!.number) {
      return broken(
        files[0]!.path,
        0,
        null,
        `files before ${files[0]!.number} of chain ${chain} are missing, and no archive records them`,
      );
    }
    const result = verifyChain(chain, files, start, key, known.get(chain));
    if ('intact' in result) return result;
    add(result);
  }

  for (const record of registry) {
    if (chains.has(record.chain) || record.last_checkpoint === null) continue;
    const whole = continuation(record.chain);
    if (whole === null || whole.seq < record.last_checkpoint.seq) {
      return broken(
        `audit-${record.chain}-1.jsonl`,
        0,
        null,
        `the store records chain ${record.chain} (started ${record.started_at}) but none of its files were given, and no archive records them`,
      );
    }
  }

  const all = [...archived.values()].flat();
  const archivedSummary: ArchivedSummary = {
    files: all.length,
    entries: all.reduce((n, f) => n + f.entries, 0),
    chains: archived.size,
    last_ts: all.reduce<string | null>(
      (t, f) => (f.last_ts !== null && (t === null || f.last_ts > t) ? f.last_ts : t),
      null,
    ),
    to: [...destinations],
  };
  return {
    intact: true,
    entries,
    chains: chains.size,
    first,
    last,
    uncheckpointed,
    archived: archivedSummary,
  };
}
