/**
 * On shared storage (several servers on one PostgreSQL database), every server's audit chain is also kept
 * in the store, so that any server — and `coffer audit verify` on any host — sees every server's chains,
 * and a chain whose files live on another host is verified from the store instead of being reported as
 * missing.
 *
 *   L <chain> 0x00 <u32 BE seq>  =  sealed { file: <file number>, lines: the lines from seq on, '\n' between }
 *
 * The files stay the chain's home. MirroredSink writes each batch into the file, keeps it in memory, and
 * stores what the file holds since the last store in the database at the file's sync: one record per file,
 * in one statement (StorageBackend.putOwn: the keys are this chain's own), before the entries that waited
 * for that sync are answered, so a change's entries are in the database before its response, and a read's
 * within audit.sync_ms. Lines that could not be stored stay and go with the next sync (a record written
 * again from the same seq holds the same lines and more); stores never overlap. Each
 * record is sealed with its storage key bound in (store/record-seal.ts), as the token records are: a
 * database administrator reads no token name, namespace or client address in it, and a run changed, moved
 * between chains or written by hand fails to open and is reported, never read as part of the chain.
 */

import {
  type StorageBackend,
  type StorageEntry,
  StorageUnavailableError,
  type StorageWrite,
} from '../storage/backend.js';
import {
  AUDIT_LINES_RANGE,
  auditLinesKey,
  auditLinesRange,
  parseAuditLinesKey,
} from '../storage/layout.js';
import { RecordIntegrityError, type RecordSeal } from '../store/record-seal.js';
import type { ChainFile } from './files.js';
import type { AuditSink } from './sink.js';

/** What an `L` record holds. */
interface StoredRun {
  readonly file: number;
  readonly lines: string;
}

interface Run {
  readonly file: number;
  readonly seq: number;
  readonly lines: readonly string[];
}

/** A line's seq: its first field (audit/entry.ts). */
function seqOf(line: string): number {
  const seq = /^\{"seq":(\d+),/.exec(line)?.[1];
  if (seq === undefined) throw new Error('an audit line without its seq first');
  return Number(seq);
}

export class MirroredSink implements AuditSink {
  /** Runs written into the file but not yet stored in the database, oldest first. */
  private unstored: Run[] = [];
  /** The store in progress: stores run one after another, each taking every run unstored when it starts. */
  private storing: Promise<void> = Promise.resolve();

  constructor(
    private readonly home: AuditSink,
    private readonly storage: Pick<StorageBackend, 'putOwn'>,
    private readonly seal: RecordSeal,
    private readonly chain: string,
  ) {}

  get position(): number {
    return this.home.position;
  }

  async write(lines: readonly string[]): Promise<void> {
    await this.home.write(lines);
    if (lines.length > 0)
      this.unstored.push({ file: this.home.position, seq: seqOf(lines[0]!), lines });
  }

  /** Syncs the file and stores every run written before the call; fails when either fails. */
  async sync(): Promise<void> {
    await Promise.all([this.home.sync(), this.store()]);
  }

  /**
   * Closes the files (every line is there, synced) and stores what is left. When the storage cannot be
   * reached now, the store's copy of this chain ends at its last store — where verify reads it as ending:
   * a checkpoint is recorded only once a sync, and so a store, succeeded.
   */
  async close(): Promise<void> {
    await this.home.close();
    await this.store().catch((err: unknown) => {
      if (!(err instanceof StorageUnavailableError)) throw err;
    });
  }

  /**
   * Stores the runs unstored when it starts, after any store in progress: one record per file they went
   * to (a sync's worth of batches in one seal and one row). Stores never overlap, so a record written
   * again with more lines (after a failed store) is never overtaken by an older, shorter one.
   */
  private store(): Promise<void> {
    const next = this.storing
      .catch(() => undefined)
      .then(async () => {
        const runs = this.unstored;
        if (runs.length === 0) return;
        await this.storage.putOwn(byFile(runs).map((run) => this.record(run)));
        // Runs are only ever added at the end while a store runs.
        this.unstored = this.unstored.slice(runs.length);
      });
    this.storing = next;
    return next;
  }

  private record(run: Run): StorageEntry {
    const key = auditLinesKey(this.chain, run.seq);
    const stored: StoredRun = { file: run.file, lines: run.lines.join('\n') };
    return { key, value: this.seal.seal('audit-lines', key, stored) };
  }
}

/** Consecutive runs of one file as one run. */
function byFile(runs: readonly Run[]): Run[] {
  const out: { file: number; seq: number; lines: string[] }[] = [];
  for (const run of runs) {
    const last = out.at(-1);
    if (last?.file === run.file) last.lines.push(...run.lines);
    else out.push({ file: run.file, seq: run.seq, lines: [...run.lines] });
  }
  return out;
}

/** The chains kept in the store, as files in the form verify, query and coverage read. */
export interface StoredChains {
  /** audit-<chain>-<n>.jsonl as the store holds it (`path` names the store, `text` holds the lines). */
  readonly files: ChainFile[];
  /** Runs that failed their integrity check: chain and first seq (their content is never used). */
  readonly damaged: { readonly chain: string; readonly seq: number }[];
}

/**
 * Every chain's lines kept in the store, grouped into the files they were written to. Written only on
 * shared storage, but read wherever they are: a store moved from PostgreSQL to LMDB keeps them, and its
 * log still verifies without the other hosts' files. (On a store that never had them: one empty range.)
 */
export async function storedChains(
  storage: Pick<StorageBackend, 'scan'>,
  seal: RecordSeal,
): Promise<StoredChains> {
  const texts = new Map<string, { chain: string; number: number; lines: string[] }>();
  const damaged: StoredChains['damaged'] = [];
  // Key order is chain, then seq: each file's runs come in order.
  for await (const { key, value } of storage.scan(AUDIT_LINES_RANGE)) {
    const { chain, seq } = parseAuditLinesKey(key);
    let run: StoredRun;
    try {
      run = seal.open<StoredRun>('audit-lines', key, value);
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      damaged.push({ chain, seq });
      continue;
    }
    const name = `audit-${chain}-${run.file}.jsonl`;
    const file = texts.get(name) ?? { chain, number: run.file, lines: [] };
    file.lines.push(run.lines);
    texts.set(name, file);
  }
  const files = [...texts].map(([name, f]) => ({
    path: `database:${name}`,
    chain: f.chain,
    number: f.number,
    text: `${f.lines.join('\n')}\n`,
  }));
  return { files, damaged };
}

/**
 * After `coffer audit archive` moved files out of the audit directory (and recorded it in the log), the
 * store's copy of those files goes too: each chain's runs in its archived files — a prefix of the chain's
 * files, which its writer never writes again — deleted in one transaction per chain. The copy then
 * begins where the files do, on every host, and verify reads the archive's record for what went before.
 * Runs that fail their integrity check are left for verify to report. Returns how many runs went.
 */
export async function forgetArchived(
  storage: Pick<StorageBackend, 'scan' | 'atomic'>,
  seal: RecordSeal,
  archived: readonly { readonly chain: string; readonly file: number }[],
): Promise<number> {
  const upTo = new Map<string, number>();
  for (const { chain, file } of archived) upTo.set(chain, Math.max(file, upTo.get(chain) ?? 0));
  let forgotten = 0;
  for (const [chain, last] of upTo) {
    const gone: StorageWrite[] = [];
    for await (const { key, value } of storage.scan(auditLinesRange(chain))) {
      try {
        if (seal.open<StoredRun>('audit-lines', key, value).file <= last)
          gone.push({ op: 'delete', key });
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
      }
    }
    if (gone.length > 0) await storage.atomic([], () => ({ writes: gone, result: undefined }));
    forgotten += gone.length;
  }
  return forgotten;
}
