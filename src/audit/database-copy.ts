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

import type { AuditRecords } from '../store/audit-records.js';
import { StorageUnavailableError } from '../store/store-errors.js';
import { type ChainFile, chainFileText } from './files.js';
import type { AuditSink } from './sink.js';

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
    private readonly records: Pick<AuditRecords, 'storeRuns'>,
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
        // Taken out of the list before the store: batches written while it runs go into a new list (they
        // used to be pushed into this very array and then dropped with it, leaving a hole in the copy).
        const runs = this.unstored;
        if (runs.length === 0) return;
        this.unstored = [];
        try {
          await this.records.storeRuns(
            byFile(runs).map((run) => ({
              seq: run.seq,
              file: run.file,
              lines: run.lines.join('\n'),
            })),
            this.chain,
          );
        } catch (err) {
          // Not stored: they go with the next store, before what was written meanwhile.
          this.unstored = [...runs, ...this.unstored];
          throw err;
        }
      });
    this.storing = next;
    return next;
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
  records: Pick<AuditRecords, 'storedRuns'>,
): Promise<StoredChains> {
  const { runs, damaged } = await records.storedRuns();
  const texts = new Map<string, { chain: string; number: number; lines: string[] }>();
  // Runs come in chain, then seq order: each file's runs in order.
  for (const run of runs) {
    const name = `audit-${run.chain}-${run.file}.jsonl`;
    const file = texts.get(name) ?? { chain: run.chain, number: run.file, lines: [] };
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
 * Returns how many runs went.
 */
export async function forgetArchived(
  records: Pick<AuditRecords, 'forgetRuns'>,
  archived: readonly { readonly chain: string; readonly file: number }[],
): Promise<number> {
  const upTo = new Map<string, number>();
  for (const { chain, file } of archived) upTo.set(chain, Math.max(file, upTo.get(chain) ?? 0));
  let forgotten = 0;
  for (const [chain, last] of upTo) forgotten += await records.forgetRuns(chain, last);
  return forgotten;
}

/**
 * Stores the lines of chain `chain`'s `files` that its copy in the store does not hold (a server killed
 * between writing lines into its file and storing them): the files are the chain's home, so the copy is
 * completed from them, one run per file, after its last stored line.
 */
export async function storeMissingLines(
  records: Pick<AuditRecords, 'storedRuns' | 'storeRuns'>,
  chain: string,
  files: readonly ChainFile[],
): Promise<number> {
  let last = 0;
  for (const run of (await records.storedRuns(chain)).runs)
    last = Math.max(last, run.seq + run.lines.split('\n').length - 1);
  const runs: { seq: number; file: number; lines: string }[] = [];
  for (const file of files) {
    const missing = chainFileText(file)
      .split('\n')
      .filter((line) => line !== '' && seqOf(line) > last);
    if (missing.length > 0)
      runs.push({ seq: seqOf(missing[0]!), file: file.number, lines: missing.join('\n') });
  }
  if (runs.length > 0) await records.storeRuns(runs, chain);
  return runs.reduce((n, r) => n + r.lines.split('\n').length, 0);
}
