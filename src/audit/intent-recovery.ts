/**
 * At start-up, before anything is served: intent copies still in the store (audit/intent-journal.ts) —
 * their process stopped before its audit file was synced past them — are checked against their chain's
 * files. A copy whose exact line is in the file is just deleted. A copy whose line is not there (the file
 * lost its unsynced tail to a power loss or a crash of the machine, or the process was killed between the
 * commit and the line's write) is put back into the log, in this process's chain, as a durable
 * `audit.intent_recovered` event that carries the original entry, then deleted; so every change on disk
 * stays named by the log.
 */
import type { AuditRecords } from '../store/audit-records.js';
import type { AuditLog } from './audit-log.js';
import { storedChains } from './database-copy.js';
import { auditFilesIn, type ChainFile, chainFiles, chainFileText } from './files.js';

export interface IntentCopy {
  readonly chain: string;
  readonly seq: number;
  /** The line; '' when the copy failed its integrity check. */
  readonly line: string;
  /** The entry the line holds; null when the copy fails its check or is not one (damaged or altered storage). */
  readonly entry: Record<string, unknown> | null;
  /** The stored size, for reports. */
  readonly bytes: number;
}

/** Every intent copy in the store, in chain and seq order, with the entry each holds. */
export async function intentCopies(
  records: Pick<AuditRecords, 'intentCopies'>,
): Promise<IntentCopy[]> {
  return (await records.intentCopies()).map((copy) => ({
    ...copy,
    entry: copy.line === '' ? null : entryOf(copy.line),
  }));
}

function entryOf(line: string): Record<string, unknown> | null {
  try {
    const entry: unknown = JSON.parse(line);
    return typeof entry === 'object' && entry !== null && !Array.isArray(entry)
      ? (entry as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

export interface Recovery {
  /** Copies found in the store. */
  readonly found: number;
  /** Of those, the ones missing from their chain's files, now put back into the log. */
  readonly recovered: number;
}

/**
 * `leaveYoungerThanMs`: copies made less than this long ago are left alone — with a server running (the
 * archive command runs beside one, and on shared storage other servers run all the time) such a copy's line
 * may be on its way into its file this very moment. On shared storage a chain whose files are on another
 * host is read from the store's copy of it (audit/database-copy.ts).
 */
export async function recoverIntents(
  records: AuditRecords,
  auditDir: string,
  audit: AuditLog,
  options: { readonly leaveYoungerThanMs?: number } = {},
): Promise<Recovery> {
  const cutoff =
    options.leaveYoungerThanMs === undefined ? Infinity : Date.now() - options.leaveYoungerThanMs;
  const young = (c: IntentCopy): boolean =>
    typeof c.entry?.ts === 'string' && Date.parse(c.entry.ts) > cutoff;
  const copies = (await intentCopies(records)).filter((c) => !young(c));
  if (copies.length === 0) return { found: 0, recovered: 0 };
  const files = chainFiles(auditFilesIn(auditDir), (await storedChains(records)).files);
  let recovered = 0;
  for (const [chain, ofChain] of groupBy(copies, (c) => c.chain)) {
    const inFile = linesAt(files.get(chain) ?? [], new Set(ofChain.map((c) => c.seq)));
    for (const copy of ofChain) {
      if (holds(inFile.get(copy.seq), copy)) continue;
      // An unreadable or forged copy is still reported (never its content): something was put there that
      // the log cannot vouch for.
      const intent = copy.entry ?? { unreadable: true, bytes: copy.bytes };
      const recorded = await audit.event('audit.intent_recovered', {
        from_chain: chain,
        from_seq: copy.seq,
        intent,
      });
      if (!recorded)
        throw new Error(
          'the audit log cannot be written: intents recovered from the store could not be put back into it',
        );
      recovered++;
    }
    await records.deleteIntentCopies(ofChain);
  }
  return { found: copies.length, recovered };
}

/**
 * Whether the chain's `line` at the copy's seq is the copy's intent: the same line, or the same intent made
 * again after the line was placed (the writer makes queued lines again, with another `prev`, when a write
 * fails and the requests before them are refused: audit/writer.ts).
 */
function holds(line: string | undefined, copy: IntentCopy): boolean {
  if (line === undefined) return false;
  if (line === copy.line) return true;
  const entry = entryOf(line);
  return (
    entry?.kind === 'intent' &&
    copy.entry?.kind === 'intent' &&
    typeof entry.request_id === 'string' &&
    entry.request_id === copy.entry.request_id
  );
}

/** The lines with the wanted seqs in a chain's files. A line's seq is its first field (audit/entry.ts). */
function linesAt(files: readonly ChainFile[], wanted: ReadonlySet<number>): Map<number, string> {
  const found = new Map<number, string>();
  for (const file of files) {
    for (const line of chainFileText(file).split('\n')) {
      const seq = /^\{"seq":(\d+),/.exec(line)?.[1];
      if (seq !== undefined && wanted.has(Number(seq))) found.set(Number(seq), line);
    }
  }
  return found;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const list = groups.get(keyOf(item)) ?? [];
    list.push(item);
    groups.set(keyOf(item), list);
  }
  return groups;
}
