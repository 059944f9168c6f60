/**
 * The store's register of audit chains, for an auditor (GET /v1/sys/audit/chains): every chain a server
 * started, in the order the store counted them, who wrote it, whether it is still open or how it ended,
 * and its newest checkpoint; the ordinals the count says were started but no record holds (a register put
 * back, or records deleted) and this host's own mark of the count (store/high-water.ts). It reads the
 * records only: `coffer audit verify` is what holds them against the files.
 */
import type { AuditRecords, ChainRecord } from '../store/audit-records.js';

export interface ChainSummary {
  readonly chain: string;
  /** Its place among every chain the store started; null for a chain of format 1 (before ordinals). */
  readonly ordinal: number | null;
  readonly format: 1 | 2;
  /** null for a record that failed its integrity check (the rest of it is unknown then). */
  readonly started_at: string | null;
  readonly writer: { readonly host: string; readonly pid: number } | null;
  /** null while the chain is open (its server runs, or stopped without a word and no start closed it). */
  readonly closed: { readonly seq: number; readonly at: string; readonly by: string } | null;
  readonly last_checkpoint_seq: number | null;
  readonly damaged: boolean;
}

export interface ChainRegister {
  /** How many chains the store's count says were started. */
  readonly count: number;
  /** The greatest count this host has seen (null where it keeps none): above `count`, the store went back. */
  readonly host_seen: number | null;
  readonly chains: ChainSummary[];
  /** Ordinals from 1 to `count` that no chain record holds. */
  readonly missing_ordinals: number[];
}

export class ChainReport {
  constructor(private readonly records: AuditRecords) {}

  async register(): Promise<ChainRegister> {
    const [count, records] = await Promise.all([this.records.chainCount(), this.records.chains()]);
    const chains = records.map(summaryOf).sort(byOrdinal);
    const held = new Set(chains.map((c) => c.ordinal));
    const missing: number[] = [];
    for (let ordinal = 1; ordinal <= count; ordinal++)
      if (!held.has(ordinal)) missing.push(ordinal);
    return { count, host_seen: this.records.chainCountSeen(), chains, missing_ordinals: missing };
  }
}

function summaryOf(record: ChainRecord): ChainSummary {
  return {
    chain: record.chain,
    ordinal: record.ordinal ?? null,
    format: record.format ?? 1,
    started_at: record.damaged ? null : record.started_at,
    writer: record.writer ? { host: record.writer.host, pid: record.writer.pid } : null,
    closed: record.closed ?? null,
    last_checkpoint_seq: record.last_checkpoint?.seq ?? null,
    damaged: record.damaged === true,
  };
}

/** Format 1's chains (no ordinal) first, by start; then in the store's count order. */
function byOrdinal(a: ChainSummary, b: ChainSummary): number {
  if (a.ordinal === null || b.ordinal === null)
    return a.ordinal === b.ordinal
      ? (a.started_at ?? '').localeCompare(b.started_at ?? '')
      : a.ordinal === null
        ? -1
        : 1;
  return a.ordinal - b.ordinal;
}
