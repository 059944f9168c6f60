/**
 * Closing the chains a host's servers left open. A server closes its own chain when it stops (a final
 * checkpoint, and the store's record says the chain ended there); one that is killed, or loses power,
 * leaves its newest entries without a checkpoint, which `coffer audit verify` reports as not intact (a log
 * cut short looks the same). So each server, as it starts, closes the chains of its own host whose
 * process is gone: it checks each such chain's files (every link, with the key), stores in the store's
 * copy of the log the lines that never reached it (shared storage: the files are the truth), records
 * `audit.chain_closed` (the chain, its last seq, the link to and digest through its last line) in its own
 * chain, and then the chain's end in the store. A chain whose files do not verify is left for verify to
 * report, and logged; chains of other hosts are theirs to close.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { processRuns } from '../processes.js';
import type { AuditRecords, ChainRecord } from '../store/audit-records.js';
import type { AuditLog } from './audit-log.js';
import type { ChainKeys } from './chain-keys.js';
import { storeMissingLines } from './database-copy.js';
import { auditFilesIn, type ChainFile, chainFiles } from './files.js';
import { repairTornTails } from './tail-repair.js';
import { CHAIN_START, verifyChain } from './verify-chain.js';

/** The process id a chain's writer had: its record says (format 2), or its name does (`<time>-<pid>-…`). */
function pidOf(record: ChainRecord): number {
  return record.writer?.pid ?? Number(record.chain.split('-')[1]);
}

export interface ChainClosing {
  readonly auditDir: string;
  readonly records: AuditRecords;
  readonly keys: ChainKeys;
  /** This process's chain, which closes the others. */
  readonly own: string;
  readonly audit: AuditLog;
  /** Several servers share the store: the chains' copies there are completed from the files. */
  readonly shared: boolean;
  readonly log: Logger;
}

/** Whether `record`'s chain was written on `host` (a chain from before writers were recorded: unknown). */
function isThisHosts(record: ChainRecord, host: string): boolean {
  return record.writer?.host === host;
}

/**
 * Closes this host's chains whose process is gone; returns how many it closed. On shared storage, also
 * copies into the store this host's ended chains it holds no copy of.
 */
export async function closeStoppedChains(closing: ChainClosing): Promise<number> {
  const { records, log } = closing;
  const local = chainFiles(auditFilesIn(closing.auditDir));
  const host = hostname();
  let closed = 0;
  for (const record of await records.chains()) {
    if (record.damaged || record.chain === closing.own) continue;
    const files = local.get(record.chain);
    if (record.closed) {
      // On shared storage, a chain of this host whose copy the store never had — the store was moved here
      // from LMDB (migrate-storage), where chains are kept in their files only — is copied in, so every
      // server verifies and searches the same log.
      if (
        closing.shared &&
        files !== undefined &&
        files[0]!.number === 1 &&
        isThisHosts(record, host)
      )
        if (!(await records.hasStoredLines(record.chain)))
          await storeMissingLines(records, record.chain, files);
      continue;
    }
    // Another host's chain (its files are there), or one whose files are not here: not ours to close.
    if (record.writer ? record.writer.host !== host : files === undefined) continue;
    if (processRuns(pidOf(record))) continue;
    if (files === undefined) {
      // A chain that never wrote a line (its server died as it started); one with a checkpoint lost its
      // files, which verify reports.
      if (record.last_checkpoint === null) await records.closed(record.chain, 0, closing.own);
      continue;
    }
    if (await closeChain(closing, record, files)) closed++;
  }
  if (closed > 0)
    log.warn(
      { event: 'audit.chain_closed', closed },
      '%d audit chains of servers that stopped without closing them (killed, or a power loss) were closed',
      closed,
    );
  return closed;
}

async function closeChain(
  closing: ChainClosing,
  record: ChainRecord,
  files: readonly ChainFile[],
): Promise<boolean> {
  // A chain archived in part begins after its archived files: verify checks it from there.
  if (files[0]!.number !== 1) return false;
  // Its process is gone, so nobody writes these files: a line its kill cut short goes (and is recorded).
  for (const torn of repairTornTails(
    closing.auditDir,
    files.map((f) => f.path),
  ))
    await closing.audit.event('audit.tail_repaired', { ...torn });
  const verified = verifyChain(record.chain, files, CHAIN_START, record.format ?? 1, closing.keys);
  if ('intact' in verified) {
    closing.log.error(
      {
        event: 'audit.chain_broken',
        chain: record.chain,
        file: verified.file,
        reason: verified.reason,
      },
      'an audit chain left open by a stopped server does not verify: left open for verify to report',
    );
    return false;
  }
  if (closing.shared) await storeMissingLines(closing.records, record.chain, files);
  // (Named closed_*: an entry's own seq, chain and prev come first in its line, audit/entry.ts.)
  const recorded = await closing.audit.event('audit.chain_closed', {
    closed_chain: record.chain,
    closed_seq: verified.end.seq,
    closed_link: verified.end.hash,
    ...(verified.end.digest ? { closed_digest: verified.end.digest } : {}),
    uncovered: verified.tail.entries,
    reason: `its process (pid ${pidOf(record)}) is gone: it stopped without closing its log`,
  });
  if (!recorded) return false;
  await closing.records.closed(record.chain, verified.end.seq, closing.own);
  return true;
}
