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
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Packr } from 'msgpackr';
import type { Logger } from 'pino';
import { SealedDataError } from '../crypto/aead.js';
import { type RecordIdentity, remacConfig, rewrapSecret } from '../crypto/envelope.js';
import { randomBase62 } from '../crypto/random.js';
import { AppError } from '../errors.js';
import { packVersion, unpackVersion } from '../kv/records.js';
import type { OperatorEvents } from '../model/operator-events.js';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import {
  parseVersionKey,
  REWRAP_STATE_KEY as STATE_KEY,
  VERSIONS_RANGE,
} from '../storage/layout.js';
import { GENERATION_KEY, type KeyringHolder, StaleKeyringError } from '../store/keyring-store.js';
import { RecordIntegrityError } from '../store/record-seal.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const HEARTBEAT_MS = 10_000;

export interface RewrapState {
  readonly target: number;
  /** The last storage key examined (the cursor), or null at the start. */
  readonly after: Uint8Array | null;
  readonly total: number;
  readonly examined: number;
  readonly rewrapped: number;
  /** Records that failed to open or verify (logged as integrity errors); they are left as they are. */
  readonly failed: number;
  readonly startedAt: number;
  readonly updatedAt: number;
  readonly finishedAt: number | null;
  readonly owner: string;
}

export interface RewrapDeps {
  readonly storage: StorageBackend;
  readonly keyring: KeyringHolder;
  readonly now: () => number;
  readonly log: Logger;
  readonly events: OperatorEvents;
}

/** Thrown in a batch's transaction when another server has taken the run over. */
class LeaseLostError extends Error {
  constructor() {
    super('another server took the rewrap over');
    this.name = 'LeaseLostError';
  }
}

function ownerAlive(owner: string): boolean {
  const [host, pid] = owner.split(':');
  if (host !== hostname()) return true; // another host: trust the heartbeat alone
  try {
    // A killed process whose parent died too may linger as a zombie (state Z) where nothing reaps it.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
  }
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch {
    return false;
  }
}

export class Rewrapper {
  private current: Promise<void> | null = null;
  private stopping = false;
  /** This rewrapper's lease owner name: host:pid:instance. */
  private readonly me = `${hostname()}:${process.pid}:${randomBase62(8)}`;

  constructor(private readonly deps: RewrapDeps) {}

  /** The stored state; 500 integrity_error when it fails its MAC (logged and audited). */
  async state(): Promise<RewrapState | null> {
    try {
      return await this.stored();
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      await this.reportDamage(err);
      throw new AppError(
        'integrity_error',
        'the stored rewrap state failed its integrity check and was not used; starting a rewrap begins a new run',
      );
    }
  }

  private async stored(): Promise<RewrapState | null> {
    const bytes = await this.deps.storage.get(STATE_KEY);
    return bytes ? this.unpackState(bytes) : null;
  }

  /** The state in stored `bytes`; throws RecordIntegrityError when they fail their MAC. */
  private unpackState(bytes: Uint8Array): RewrapState {
    return packr.unpack(
      this.deps.keyring.recordSeal.verified('rewrap-state', STATE_KEY, bytes),
    ) as RewrapState;
  }

  private packState(state: RewrapState): Buffer {
    return this.deps.keyring.recordSeal.authenticate('rewrap-state', STATE_KEY, packr.pack(state));
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
      before = await this.stored();
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
      let total = 0;
      for await (const _ of this.deps.storage.scan(VERSIONS_RANGE)) total++;
      first = {
        target,
        after: null,
        total,
        examined: 0,
        rewrapped: 0,
        failed: 0,
        startedAt: now,
        updatedAt: now,
        finishedAt: null,
        owner: this.me,
      };
    }
    return this.deps.storage.atomic([STATE_KEY], ([bytes]) => {
      let current: RewrapState | null = null;
      try {
        current = bytes === undefined ? null : this.unpackState(bytes);
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err; // a damaged state is replaced (reported by start)
      }
      if (this.heldByAnother(current)) return { writes: [], result: current! };
      return {
        writes: [{ op: 'put', key: STATE_KEY, value: this.packState(first) }],
        result: first,
      };
    });
  }

  private async save(state: RewrapState): Promise<RewrapState> {
    await this.deps.storage.atomic([], () => ({
      writes: [{ op: 'put', key: STATE_KEY, value: this.packState(state) }],
      result: undefined,
    }));
    return state;
  }

  private async run(first: RewrapState, batchSize: number): Promise<RewrapState> {
    let state = first;
    for (;;) {
      if (this.stopping) return state;
      const start = state.after
        ? Buffer.concat([state.after, Buffer.from([0])])
        : VERSIONS_RANGE.start;
      const batch: { key: Uint8Array; value: Uint8Array }[] = [];
      for await (const entry of this.deps.storage.scan({
        start,
        end: VERSIONS_RANGE.end,
        limit: batchSize,
      }))
        batch.push(entry);
      if (batch.length === 0)
        return this.save({ ...state, finishedAt: this.deps.now(), updatedAt: this.deps.now() });
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
    batch: readonly { key: Uint8Array; value: Uint8Array }[],
  ): Promise<RewrapState> {
    const keyring = this.deps.keyring.current();
    const stamp = this.deps.keyring.stamp;
    if (keyring.activeVersion !== state.target) throw new StaleKeyringError();
    const changes: { key: Uint8Array; old: Uint8Array; next: Buffer }[] = [];
    let failed = 0;
    for (const { key, value } of batch) {
      const record = unpackVersion(value);
      const where = parseVersionKey(key);
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
      const id: RecordIdentity = { ...where, type: record.type };
      try {
        const next =
          record.type === 'secret'
            ? packVersion({ ...record, sealed: rewrapSecret(keyring, id, record.sealed) })
            : packVersion({ ...record, seal: remacConfig(keyring, id, record.value, record.seal) });
        changes.push({ key, old: value, next });
      } catch (err) {
        if (!(err instanceof SealedDataError)) throw err;
        failed++;
        this.deps.log.error(
          { ...where, reason: `${record.type} record failed to open or verify` },
          'INTEGRITY ERROR during rewrap',
        );
      }
    }
    const last = batch[batch.length - 1]!.key;
    const keys = [...changes.map((c) => c.key), GENERATION_KEY, STATE_KEY];
    return this.deps.storage.atomic(keys, (current) => {
      this.deps.keyring.checkCurrent(stamp, current[changes.length]);
      const held = current[changes.length + 1];
      if (held === undefined || this.unpackState(held).owner !== this.me)
        throw new LeaseLostError();
      const writes: StorageWrite[] = [];
      changes.forEach((c, i) => {
        const now = current[i];
        if (now && Buffer.compare(now, c.old) === 0)
          writes.push({ op: 'put', key: c.key, value: c.next });
      });
      const next: RewrapState = {
        ...state,
        after: Buffer.from(last),
        examined: state.examined + batch.length,
        rewrapped: state.rewrapped + writes.length,
        failed: state.failed + failed,
        updatedAt: this.deps.now(),
      };
      writes.push({ op: 'put', key: STATE_KEY, value: this.packState(next) });
      return { writes, result: next };
    });
  }
}
