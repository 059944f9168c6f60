/**
 * Rewrap: moves every stored record onto the keyring's active version without decrypting any value.
 * A secret's data key is unwrapped and wrapped again (its ciphertext is untouched); a config value's MAC
 * is checked and made again. Afterwards, versions that wrap nothing can be retired.
 *
 * Invariants:
 * - The job's state (target version, cursor, counts) is written in the same transaction as each batch,
 *   so a crash or kill -9 loses at most the batch in flight, and a new run continues after the cursor.
 * - A batch replaces a record only if its bytes are still those that were read (versions never change;
 *   one may have been deleted meanwhile), and only if the keyring generation is unchanged.
 * - Reads and writes go on throughout: each batch is one short transaction, and the job yields to the
 *   event loop between batches.
 * - One run at a time per store, by a lease: a run records its owner (host, pid and a random instance id)
 *   and a heartbeat (every batch), taken by compare-and-set in the store's own transaction, so two servers
 *   starting together cannot both run. Another start is refused while the owner is alive (on this host)
 *   and beating; once its heartbeat is HEARTBEAT_MS old (or, on this host, its process is gone) another
 *   server takes the run over from its cursor. A run whose lease was taken over stops at its next batch.
 * - The state is MACed under the record key (kind `rewrap-state`), so its cursor cannot be moved by hand to
 *   make a run skip records; a state that fails its MAC is never used: progress answers 500
 *   `integrity_error`, and a start begins a new run from the first record.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { SealedDataError } from '../crypto/aead.js';
import { type RecordIdentity, remacConfig, rewrapSecret } from '../crypto/envelope.js';
import { randomBase62 } from '../crypto/random.js';
import type { OperatorEvents } from '../model/operator-events.js';
import { processRuns } from '../processes.js';
import { type KeyringHolder, StaleKeyringError } from '../store/keyring-store.js';
import { packVersion, recordIdentity, unpackVersion } from '../store/kv-format.js';
import type { KvRecords, StoredVersion } from '../store/kv-records.js';
import { RecordIntegrityError } from '../store/record-seal.js';
import {
  LeaseLostError,
  type Rewrapped,
  type RewrapRecords,
  type RewrapState,
} from '../store/rewrap-records.js';

export type { RewrapState } from '../store/rewrap-records.js';

const HEARTBEAT_MS = 10_000;

export interface RewrapDeps {
  readonly records: RewrapRecords;
  readonly kv: Pick<KvRecords, 'everyVersion'>;
  readonly keyring: KeyringHolder;
  readonly now: () => number;
  readonly log: Logger;
  readonly events: OperatorEvents;
}

function ownerAlive(owner: string): boolean {
  const [host, pid] = owner.split(':');
  if (host !== hostname()) return true; // another host: trust the heartbeat alone
  return processRuns(Number(pid));
}

export class Rewrapper {
  private current: Promise<void> | null = null;
  private stopping = false;
  /** This rewrapper's lease owner name: host:pid:instance. */
  private readonly me = `${hostname()}:${process.pid}:${randomBase62(8)}`;

  constructor(private readonly deps: RewrapDeps) {}

  /**
   * The stored state; a RecordIntegrityError (500, logged and audited where every one is) when it fails
   * its MAC: it is never used, and starting a rewrap begins a new run.
   */
  state(): Promise<RewrapState | null> {
    return this.deps.records.state();
  }

  private async reportDamage(err: RecordIntegrityError): Promise<void> {
    await this.deps.events.record(
      'store.integrity_error',
      { kind: err.kind, key: err.storageKey },
      'INTEGRITY ERROR: a stored record failed its integrity check; it was not used',
      'error',
    );
  }

  /** Whether a run is going on, here or in another live process. */
  running(state: RewrapState | null): boolean {
    if (this.current) return true;
    return this.heldByAnother(state);
  }

  /** Whether `state` is a run whose lease another live owner holds. */
  private heldByAnother(state: RewrapState | null): boolean {
    return (
      !!state &&
      state.finishedAt === null &&
      state.owner !== this.me &&
      this.deps.now() - state.updatedAt < HEARTBEAT_MS &&
      ownerAlive(state.owner)
    );
  }

  /** Starts a run in the background (continuing an unfinished one onto the same target), unless one is going on. */
  async start(batchSize: number, by: string): Promise<RewrapState> {
    let before: RewrapState | null;
    try {
      before = await this.deps.records.state();
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      await this.reportDamage(err);
      before = null; // a new run, from the first record
    }
    if (this.running(before)) return before!;
    const first = await this.begin(before);
    // Another server took the lease between our read and our claim: its run is the one going on.
    if (first.owner !== this.me) return first;
    const { events } = this.deps;
    await events.record(
      'keyring.rewrap.start',
      { by, target: first.target, total: first.total, continued: first.examined > 0 },
      'rewrap started',
    );
    this.current = this.run(first, batchSize)
      .then(
        async (done) => {
          const counts = {
            by,
            target: done.target,
            examined: done.examined,
            rewrapped: done.rewrapped,
            failed: done.failed,
          };
          if (done.finishedAt === null)
            await events.record(
              'keyring.rewrap.pause',
              counts,
              'rewrap paused at shutdown; a later start continues it',
            );
          else await events.record('keyring.rewrap.finish', counts, 'rewrap finished');
        },
        async (err: unknown) => {
          await events.record(
            'keyring.rewrap.error',
            { by, err: { message: (err as Error).message } },
            'rewrap stopped with an error',
            'error',
          );
        },
      )
      .finally(() => {
        this.current = null;
      });
    return first;
  }

  /** Stops this process's run at its next batch boundary (its state is saved; a later start continues). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.current;
  }

  /**
   * Claims the lease and returns the run's first state: `before` continued when it is unfinished and onto
   * the active version, else a new run. Resolves to the other owner's state instead when another server
   * holds the lease by the time of the claim.
   */
  private async begin(before: RewrapState | null): Promise<RewrapState> {
    await this.deps.keyring.refresh();
    const target = this.deps.keyring.current().activeVersion;
    const now = this.deps.now();
    let first: RewrapState;
    if (before && before.finishedAt === null && before.target === target) {
      first = { ...before, owner: this.me, updatedAt: now };
    } else {
      first = {
        target,
        after: null,
        total: await this.deps.records.countVersions(),
        examined: 0,
        rewrapped: 0,
        failed: 0,
        startedAt: now,
        updatedAt: now,
        finishedAt: null,
        owner: this.me,
      };
    }
    // A damaged state is replaced (start reported it).
    return this.deps.records.claim(first, (current) => this.heldByAnother(current));
  }

  private async run(first: RewrapState, batchSize: number): Promise<RewrapState> {
    let state = first;
    for (;;) {
      if (this.stopping) return state;
      const batch: StoredVersion[] = [];
      for await (const stored of this.deps.kv.everyVersion({
        after: state.after,
        limit: batchSize,
      }))
        batch.push(stored);
      if (batch.length === 0)
        return this.deps.records.save({
          ...state,
          finishedAt: this.deps.now(),
          updatedAt: this.deps.now(),
        });
      try {
        state = await this.rewrapBatch(state, batch);
      } catch (err) {
        if (err instanceof LeaseLostError) return state;
        if (!(err instanceof StaleKeyringError)) throw err;
        // The keyring changed under us (a rotation): start over onto the new active version.
        state = await this.begin(null);
        if (state.owner !== this.me) return state;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private async rewrapBatch(
    state: RewrapState,
    batch: readonly StoredVersion[],
  ): Promise<RewrapState> {
    const keyring = this.deps.keyring.current();
    const stamp = this.deps.keyring.stamp;
    if (keyring.activeVersion !== state.target) throw new StaleKeyringError();
    const changes: Rewrapped[] = [];
    let failed = 0;
    for (const stored of batch) {
      const record = unpackVersion(stored.bytes);
      const where = { namespace: stored.namespace, key: stored.key, version: stored.version };
      if (!record) {
        failed++;
        this.deps.log.error(
          { ...where, reason: 'unreadable version record' },
          'INTEGRITY ERROR during rewrap',
        );
        continue;
      }
      const keyVersion =
        record.type === 'secret' ? record.sealed.keyVersion : record.seal.keyVersion;
      if (keyVersion === state.target) continue;
      const id: RecordIdentity = recordIdentity(where, record);
      try {
        const next =
          record.type === 'secret'
            ? packVersion({ ...record, sealed: rewrapSecret(keyring, id, record.sealed) })
            : packVersion({ ...record, seal: remacConfig(keyring, id, record.value, record.seal) });
        changes.push({ cursor: stored.cursor, old: stored.bytes, next });
      } catch (err) {
        if (!(err instanceof SealedDataError)) throw err;
        failed++;
        this.deps.log.error(
          { ...where, reason: `${record.type} record failed to open or verify` },
          'INTEGRITY ERROR during rewrap',
        );
      }
    }
    const last = batch[batch.length - 1]!.cursor;
    return this.deps.records.commit(stamp, this.me, changes, (rewrapped) => ({
      ...state,
      after: Buffer.from(last),
      examined: state.examined + batch.length,
      rewrapped: state.rewrapped + rewrapped,
      failed: state.failed + failed,
      updatedAt: this.deps.now(),
    }));
  }
}
