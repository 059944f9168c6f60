/** What the audit writer (writer.ts) is given, and what it gives back: options, durabilities, entries placed. */
import type { AuditRecords } from '../store/audit-records.js';
import type { ChainKeys } from './chain-keys.js';
import type { AuditFields } from './entry.js';
import type { AuditSink } from './sink.js';
import type { ChainStream } from './streams/chain-streams.js';

export interface AuditWriterOptions {
  /** The chain's home: every line is there, where its entry asked to be, before its waiter is answered. */
  readonly sink: AuditSink;
  /** Also given every batch once it is where it was asked to be (stdout); their failures are ignored. */
  readonly copies?: readonly AuditSink[];
  readonly chain: string;
  /** The link and signing keys (audit/chain-keys.ts). */
  readonly keys: () => ChainKeys;
  readonly registry: Pick<AuditRecords, 'checkpointed' | 'closed'>;
  readonly checkpointEvery: number;
  readonly checkpointMs: number;
  readonly now: () => number;
  /** At most this long between a `written` entry and its sync to disk (default 50 ms). */
  readonly syncMs?: number;
  /** Told after each sync to disk: every entry up to `seq` is durable. */
  readonly onSynced?: (seq: number) => void;
  /**
   * What this process has seen of the store that only grows (the keyring generation, its chain's
   * ordinal), written into each checkpoint as `high_water`: kept in the log, and in every stream's copy,
   * where the data directory's writer cannot put it back unnoticed (audit/coverage.ts holds the store to it).
   */
  readonly highWater?: () => Readonly<Record<string, number>>;
  /**
   * Audit streams (streams/audit-stream.ts): given every batch once it is where it was asked to be, in
   * order; a required one must have the batch within STREAM_WAIT_MS before its requests are answered.
   */
  readonly streams?: readonly ChainStream[];
  /**
   * Seals the chain with signed checkpoints: every batch that holds a `sealed` entry (a change's answer) or a
   * `durable` one ends with one, written, synced and shipped with the batch before any of its answers go
   * out; the lines of other batches (reads, `written` only) are sealed within SHIP_MS (250 ms), just
   * before the streams that are not required are sent them (streams/chain-streams.ts), so each shipment to
   * them ends with a signature. So every acknowledged change is under a signature in the log and in each
   * stream's copy, and a copy's lines can be told from lines added to it (audit/against.ts). On whenever a
   * stream is configured (startup/open-audit.ts). A seal is not recorded in the store; the checkpoints every
   * `checkpointEvery` entries, `checkpointMs` and at close still are.
   */
  readonly sealBatches?: boolean;
}

/**
 * `durable`: resolve once synced to disk; `written`: once in the file (the kernel), synced within syncMs;
 * `sealed`: written, and with sealBatches under a seal written in the same batch (a change's answer).
 */
export type Durability = 'durable' | 'sealed' | 'written';

/** An entry placed in the chain: its position and exact line, and when it is where it was asked to be. */
export interface Appended {
  readonly seq: number;
  readonly line: string;
  readonly done: Promise<void>;
}

export class AuditUnavailableError extends Error {
  constructor(reason: string) {
    super(`the audit log cannot be written (${reason})`);
    this.name = 'AuditUnavailableError';
  }
}

/** A required audit stream did not take the lines in time: they are in the file, not in the stream. */
export class StreamUnavailableError extends AuditUnavailableError {
  constructor(reason: string) {
    super(reason);
    this.name = 'StreamUnavailableError';
  }
}

/** An entry in the writer's queue, until its line is where it was asked to be. */
export interface Pending {
  /**
   * The entry's line, the link to it (the next line's `prev`) and the running digest through it; rendered
   * again, with the entries after it, if its answer is refused.
   */
  line: string;
  link: string;
  digest: string;
  fields: AuditFields;
  readonly ts: number;
  readonly seq: number;
  readonly checkpoint: boolean;
  /** A checkpoint the store records (every one but a batch's seal). */
  readonly recorded: boolean;
  readonly durable: boolean;
  /** Its batch must end with a seal (sealBatches): a change's answer waits for it. */
  readonly sealNow: boolean;
  /**
   * The answer of a change already committed, whose intent a required stream took before the commit: once
   * its line is in the file it is answered as what happened, even when a required stream then fails.
   */
  readonly committed: boolean;
  readonly waiters: { resolve: () => void; reject: (err: Error) => void }[];
}
