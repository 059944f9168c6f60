/**
 * A rewrap's records: its state (`Srewrap`: target version, cursor, counts, lease owner and heartbeat),
 * MACed under the record key so a cursor moved by hand is never used, and the batches of version records
 * it moves onto the active keyring version (operator/rewrap.ts decides what they become).
 *
 * Each batch commits in one transaction with the state, replacing a record only if its bytes are still
 * those that were read (versions never change; one may have been deleted meanwhile), only if the keyring
 * generation is unchanged (StaleKeyringError), and only while the run still holds the lease
 * (LeaseLostError).
 */
import { Packr } from 'msgpackr';
import type { StorageBackend, StorageWrite } from '../storage/backend.js';
import type { GenerationStamp, KeyringHolder } from './keyring-store.js';
import { GENERATION_KEY } from './keyring-store.js';
import { REWRAP_STATE_KEY as STATE_KEY, VERSIONS_RANGE } from './layout.js';
import { RecordIntegrityError, type RecordSeal } from './record-seal.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

export interface RewrapState {
  readonly target: number;
  /** The cursor: the last version record examined (as KvRecords.everyVersion gives it), or null at the start. */
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

/** One record of a batch: where it is (its cursor), the bytes read, and what it becomes. */
export interface Rewrapped {
  readonly cursor: Uint8Array;
  readonly old: Uint8Array;
  readonly next: Uint8Array;
}

/** Thrown in a batch's transaction when another server has taken the run over. */
export class LeaseLostError extends Error {
  constructor() {
    super('another server took the rewrap over');
    this.name = 'LeaseLostError';
  }
}

export class RewrapRecords {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly keyring: Pick<KeyringHolder, 'checkCurrent'>,
  ) {}

  /** The stored state, or null; throws RecordIntegrityError when it fails its MAC. */
  async state(): Promise<RewrapState | null> {
    const bytes = await this.storage.get(STATE_KEY);
    return bytes ? this.unpack(bytes) : null;
  }

  /** How many version records the store holds (a new run's total). */
  async countVersions(): Promise<number> {
    let total = 0;
    for await (const _ of this.storage.scan(VERSIONS_RANGE)) total++;
    return total;
  }

  /**
   * Stores `first` as the run's state, unless `heldByAnother` says the state stored now (null when there is
   * none or it fails its MAC: it is replaced) belongs to a live run of another owner: that state is then
   * returned instead. One transaction: two servers claiming together cannot both win.
   */
  claim(
    first: RewrapState,
    heldByAnother: (current: RewrapState | null) => boolean,
  ): Promise<RewrapState> {
    return this.storage.atomic([STATE_KEY], ([bytes]) => {
      let current: RewrapState | null = null;
      try {
        current = bytes === undefined ? null : this.unpack(bytes);
      } catch (err) {
        if (!(err instanceof RecordIntegrityError)) throw err;
      }
      if (heldByAnother(current)) return { writes: [], result: current! };
      return { writes: [{ op: 'put', key: STATE_KEY, value: this.pack(first) }], result: first };
    });
  }

  async save(state: RewrapState): Promise<RewrapState> {
    await this.storage.atomic([], () => ({
      writes: [{ op: 'put', key: STATE_KEY, value: this.pack(state) }],
      result: undefined,
    }));
    return state;
  }

  /**
   * Commits one batch: each of `changes` whose record is still the one read, and the state `next` makes of
   * how many were replaced — if the keyring generation is still `stamp`'s and `owner` still holds the lease.
   */
  commit(
    stamp: GenerationStamp,
    owner: string,
    changes: readonly Rewrapped[],
    next: (rewrapped: number) => RewrapState,
  ): Promise<RewrapState> {
    const keys = [...changes.map((c) => c.cursor), GENERATION_KEY, STATE_KEY];
    return this.storage.atomic(keys, (current) => {
      this.keyring.checkCurrent(stamp, current[changes.length]);
      const held = current[changes.length + 1];
      if (held === undefined || this.unpack(held).owner !== owner) throw new LeaseLostError();
      const writes: StorageWrite[] = [];
      changes.forEach((c, i) => {
        const now = current[i];
        if (now && Buffer.compare(now, c.old) === 0)
          writes.push({ op: 'put', key: c.cursor, value: c.next });
      });
      const state = next(writes.length);
      writes.push({ op: 'put', key: STATE_KEY, value: this.pack(state) });
      return { writes, result: state };
    });
  }

  private unpack(bytes: Uint8Array): RewrapState {
    return packr.unpack(this.seal.verified('rewrap-state', STATE_KEY, bytes)) as RewrapState;
  }

  private pack(state: RewrapState): Buffer {
    return this.seal.authenticate('rewrap-state', STATE_KEY, packr.pack(state));
  }
}
