/**
 * Verifying the whole audit log: every chain's files (audit/verify-chain.ts), held against the store's
 * record of the chains — which chains exist (each has an ordinal, and the store counts them, so a chain
 * deleted whole leaves a gap), how far each reached (its newest checkpoint), and whether it ended.
 *
 * A chain that has not ended may have entries after its newest checkpoint only while its server is alive
 * and about to checkpoint them (the live tail: entries younger than its checkpoint interval and a grace);
 * an uncovered tail older than that — a server killed, or a log cut short — is reported as not intact until
 * a server starting on its host closes the chain (audit/chain-closing.ts). A chain's copy in the store
 * (shared storage) that ends before what the store records of it is a copy behind its host's files, said
 * as such: not the same thing as a history changed.
 *
 * Archived files (`coffer audit archive`, audit/archive.ts) are accounted for by the `audit.archive` events
 * that recorded them: a chain may then begin at file n + 1, its first entry following the last archived one,
 * or be archived whole. Only an archive event that a valid checkpoint covers, in a chain the store knows,
 * is believed: without the key, nobody can make files disappear by claiming they were archived.
 */
import type { ChainRecord, ChainWriter } from '../store/audit-records.js';
import type { ChainKeys } from './chain-keys.js';
import { copyBehindFiles } from './copy-behind.js';
import type { StoredChains } from './database-copy.js';
import { type ChainFile, chainFiles } from './files.js';
import {
  type ArchivedFile,
  type Broken,
  broken,
  CHAIN_START,
  type ChainResult,
  type Start,
  verifyChain,
} from './verify-chain.js';

export type { ArchivedFile } from './verify-chain.js';

/** How long past its checkpoint interval a running server's newest entries may wait for a checkpoint. */
export const LIVE_GRACE_MS = 30_000;

/** The checkpoint interval a chain's record would say (audit.checkpoint_seconds' default), for files alone. */
const DEFAULT_CHECKPOINT_MS = 10_000;

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
      /** Entries of running servers not yet covered by a checkpoint (the live tail). */
      readonly uncheckpointed: number;
      readonly archived: ArchivedSummary;
    }
  | Broken;

export interface VerifyInput {
  readonly keys: ChainKeys;
  /** The store's record of the chains; null for an auditor who checks files alone (with the public key). */
  readonly registry: readonly ChainRecord[] | null;
  /** How many chains the store counts, and the greatest count this host has seen (null: none kept). */
  readonly counted?: { readonly count: number; readonly seen: number | null };
  /** On shared storage: the chains the store keeps, for those whose files are on other hosts. */
  readonly stored?: StoredChains;
  readonly now: number;
  /**
   * Whether a chain's writer still runs: true or false where that can be seen (its host is this one),
   * null where it cannot (its entries' age then says whether the tail is live).
   */
  readonly alive?: (writer: ChainWriter) => boolean | null;
}

/** Verifies the chains of `paths`, and with `input.stored` every other chain the store keeps. */
export function verifyAudit(paths: readonly string[], input: VerifyInput): VerifyResult {
  const { registry, stored } = input;
  // The store's record of a chain that fails its integrity check vouches for nothing: a rolled-back
  // checkpoint could hide a truncated file.
  const damaged = registry?.find((r) => r.damaged);
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
  const missing = registry && input.counted && missingChain(registry, input.counted);
  if (missing) return missing;
  const cut = stored && copyBehindFiles(paths, stored, registry);
  if (cut) return cut;

  const chains = chainFiles(paths, stored?.files);
  const known = new Map((registry ?? []).map((r) => [r.chain, r]));
  const totals = {
    entries: 0,
    uncheckpointed: 0,
    first: null as string | null,
    last: null as string | null,
  };
  // Where each chain's files end, and where later starts found the chains they closed.
  const ends = new Map<string, { seq: number; hash: string; file: string }>();
  const closings: (ChainResult['closings'][number] & { readonly by: string })[] = [];
  const noteEnd = (chain: string, result: ChainResult): void => {
    ends.set(chain, result.end);
    for (const closing of result.closings) closings.push({ ...closing, by: chain });
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
    const result = checkChain(chain, files, CHAIN_START, input, known.get(chain));
    if ('intact' in result) return result;
    add(totals, result);
    noteEnd(chain, result);
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
    const last = files.at(-1)!;
    return {
      seq: last.last_seq,
      prev: last.last_hash,
      digest: last.last_digest ?? '',
      file: last.file + 1,
    };
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
    const result = checkChain(chain, files, start, input, known.get(chain));
    if ('intact' in result) return result;
    add(totals, result);
    noteEnd(chain, result);
  }

  // A chain a later start closed must end where that start found its end: a file cut (and its store
  // record put back to match) afterwards still disagrees with the closing chain's own entry.
  for (const closing of closings) {
    const end = ends.get(closing.chain);
    if (end === undefined) continue; // archived whole, or not among the files given
    const linkDiffers =
      input.keys.link !== undefined &&
      closing.link !== '' &&
      end.seq === closing.seq &&
      end.hash !== closing.link;
    if (end.seq !== closing.seq || linkDiffers)
      return broken(
        end.file,
        0,
        end.seq,
        end.seq < closing.seq
          ? `chain ${closing.chain} was closed at seq ${closing.seq} (audit.chain_closed in chain ${closing.by}), but its files end at seq ${end.seq}: the log was cut`
          : end.seq > closing.seq
            ? `chain ${closing.chain} was closed at seq ${closing.seq} (audit.chain_closed in chain ${closing.by}), but its files go on to seq ${end.seq}: entries were added after it ended`
            : `chain ${closing.chain} ends at seq ${closing.seq} with another entry than the one chain ${closing.by} closed it at: its end was rewritten`,
      );
  }

  for (const record of registry ?? []) {
    if (chains.has(record.chain)) continue;
    // A chain with no files anywhere: archived whole, or one that never wrote a line (closed at 0).
    if (
      record.closed?.seq === 0 ||
      (record.format === undefined && record.last_checkpoint === null)
    )
      continue;
    const whole = continuation(record.chain);
    const reached = record.closed?.seq ?? record.last_checkpoint?.seq ?? 1;
    if (whole === null || whole.seq < reached) {
      return broken(
        `audit-${record.chain}-1.jsonl`,
        0,
        null,
        `the store records chain ${record.chain} (started ${record.started_at}) but none of its files were given, and no archive records them`,
      );
    }
  }

  const all = [...archived.values()].flat();
  return {
    intact: true,
    entries: totals.entries,
    chains: chains.size,
    first: totals.first,
    last: totals.last,
    uncheckpointed: totals.uncheckpointed,
    archived: {
      files: all.length,
      entries: all.reduce((n, f) => n + f.entries, 0),
      chains: archived.size,
      last_ts: all.reduce<string | null>(
        (t, f) => (f.last_ts !== null && (t === null || f.last_ts > t) ? f.last_ts : t),
        null,
      ),
      to: [...destinations],
    },
  };
}

/** A gap in the chains' ordinals, or a count below what this host has seen: chains deleted or put back. */
function missingChain(
  registry: readonly ChainRecord[],
  counted: NonNullable<VerifyInput['counted']>,
): Broken | null {
  if (counted.seen !== null && counted.count < counted.seen)
    return broken(
      'database:audit-chains',
      0,
      null,
      `the store counts ${counted.count} audit chains, fewer than this host has seen (${counted.seen}): the store's chain records were put back to an older copy`,
    );
  const ordinals = new Set(registry.flatMap((r) => (r.ordinal === undefined ? [] : [r.ordinal])));
  for (let n = 1; n <= counted.count; n++)
    if (!ordinals.has(n))
      return broken(
        'database:audit-chains',
        0,
        null,
        `the store's record of audit chain #${n} of ${counted.count} is missing: a chain was deleted from the log`,
      );
  return null;
}

/** One chain's files, and how they end against what the store records of the chain. */
function checkChain(
  chain: string,
  files: readonly ChainFile[],
  start: Start,
  input: VerifyInput,
  record: ChainRecord | undefined,
): (ChainResult & { readonly live: number }) | Broken {
  if (input.registry !== null && record === undefined)
    return broken(
      files[0]!.path,
      0,
      null,
      `chain ${chain} is not recorded in the store: its record was deleted, or its files were put here`,
    );
  const format = record ? (record.format ?? 1) : 2;
  const result = verifyChain(chain, files, start, format, input.keys);
  if ('intact' in result) return result;
  const copy = files[0]!.path.startsWith('database:');
  // What the store records of the chain: how far it reached, and whether it ended there.
  const recorded = record?.last_checkpoint;
  if (recorded && recorded.seq > start.seq && (result.checkpoint?.seq ?? 0) < recorded.seq)
    return broken(
      result.end.file || files.at(-1)!.path,
      0,
      result.end.seq,
      copy
        ? `the store records a checkpoint of chain ${chain} at seq ${recorded.seq}, but its copy in the store ends at seq ${result.end.seq}: the copy is behind its host's files (a server starting there stores the rest), or it was cut short`
        : `the store records a checkpoint at seq ${recorded.seq}, but the files end at seq ${result.end.seq}: the log was truncated`,
    );
  if (
    recorded &&
    result.checkpoint?.seq === recorded.seq &&
    input.keys.link !== undefined &&
    result.checkpoint.hash !== recorded.hash
  )
    return broken(
      result.end.file,
      0,
      recorded.seq,
      'the newest checkpoint differs from the one the store records',
    );
  const closed = record?.closed;
  if (closed) {
    if (result.end.seq > closed.seq)
      return broken(
        result.end.file,
        result.end.line,
        result.end.seq,
        `entries after chain ${chain} ended (at seq ${closed.seq})`,
      );
    if (result.end.seq < closed.seq)
      return broken(
        result.end.file,
        0,
        result.end.seq,
        copy
          ? `chain ${chain} ended at seq ${closed.seq}, but its copy in the store ends at seq ${result.end.seq}: the copy is behind its host's files (a server starting there stores the rest)`
          : `chain ${chain} ended at seq ${closed.seq}, but its files end at seq ${result.end.seq}: the log was truncated`,
      );
    return { ...result, live: 0 };
  }
  if (result.tail.entries === 0) return { ...result, live: 0 };
  // Files checked with the public key alone: nothing says whether a server is about to sign these. Young
  // enough to be a running server's newest (the default checkpoint interval and the grace), they are said
  // as such — an auditor's cron on a live log passes — and older ones are not intact.
  if (record === undefined) {
    const age =
      result.tail.ts === null ? Number.POSITIVE_INFINITY : input.now - Date.parse(result.tail.ts);
    if (age <= DEFAULT_CHECKPOINT_MS + LIVE_GRACE_MS)
      return { ...result, live: result.tail.entries };
    return broken(
      result.tail.file,
      result.tail.line,
      result.tail.seq,
      `the last ${result.tail.entries} entries of chain ${chain} (from ${result.tail.ts}) are not covered by a signed checkpoint, and are older than a running server leaves its newest unsigned: a log cut short or rewritten, or a server that stopped without closing it; the master key's verify tells which`,
    );
  }
  // Entries after the newest checkpoint: a running server's newest, or a chain that stopped short.
  const wait = (record.writer?.checkpoint_ms ?? 10_000) + LIVE_GRACE_MS;
  const since =
    result.tail.ts === null ? Number.POSITIVE_INFINITY : input.now - Date.parse(result.tail.ts);
  const alive = record.writer && input.alive ? input.alive(record.writer) : null;
  if (alive === true || (alive === null && since <= wait))
    return { ...result, live: result.tail.entries };
  return broken(
    result.tail.file,
    result.tail.line,
    result.tail.seq,
    `the last ${result.tail.entries} entries of chain ${chain} (from ${result.tail.ts}) are not covered by a checkpoint, and its server has not made one since: it stopped without closing its log (killed, or a power loss), or the log was cut short${copy ? ", or the copy in the store is behind its host's files" : ''}. A server starting on ${record?.writer?.host ?? 'its host'} closes it`,
  );
}

function add(
  totals: { entries: number; uncheckpointed: number; first: string | null; last: string | null },
  r: ChainResult & { readonly live: number },
): void {
  totals.entries += r.entries;
  totals.uncheckpointed += r.live;
  if (r.first !== null && (totals.first === null || r.first < totals.first)) totals.first = r.first;
  if (r.last !== null && (totals.last === null || r.last > totals.last)) totals.last = r.last;
}
