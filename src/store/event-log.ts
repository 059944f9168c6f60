/**
 * The event log: every change to a key (a write, a delete, an undelete, a destroy, versions acted on one
 * by one, its metadata), every token revocation and every keyring rotation gets a position, and its event
 * record (`E <position>`, store/layout.ts) is written in the same transaction as the change. A change
 * refused or failed writes no event. Readers see events in position order, and never one after a later one:
 *
 * - LMDB (one writer at a time): the change's plan reads and writes the log's last position
 *   (EVENT_POSITION_KEY) and takes the next, so positions follow commit order, with no gap.
 * - PostgreSQL (transactions commit side by side, across servers): the plan takes its positions from the
 *   database's sequence (storage/postgres-positions.ts), so no lock is held by every change to its commit.
 *   Positions then commit out of order and some are never used (gaps: a transaction rolled back, or one
 *   that took a position and wrote nothing). A reader reads no further than the settled position — at or
 *   below it, every position is committed or never will be — so it never passes a position still to come.
 *
 * An event names the namespace, the key, the version, the value's type, the operation, the time and the
 * token id of who made it — never a value —, MACed with its position bound (store/record-seal.ts), as the
 * key's index that holds the same names is: a record changed, or moved to another position, fails its
 * check. (Sealing it too cost a durable write about a tenth more CPU, for names the index keeps in the
 * clear anyway.) Events are kept for a retention (the tidy run prunes older ones, oldest first).
 */
import { timingSafeEqual } from 'node:crypto';
import { Packr } from 'msgpackr';
import type { KvOperation } from '../model/kv-operations.js';
import type { ValueType } from '../model/value-types.js';
import {
  hasChangeFeed,
  hasPositionSequence,
  type Plan,
  type PlanFn,
  type Positions,
  type StorageBackend,
  type StorageWrite,
} from '../storage/backend.js';
import type { KeyMeta, KeyRef } from './kv-format.js';
import { EVENT_POSITION_KEY, EVENTS_RANGE, eventKey, eventsFrom, positionOf } from './layout.js';
import { RecordIntegrityError, type RecordSeal } from './record-seal.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const NO_RECORD = Buffer.alloc(0);

export type { KvOperation } from '../model/kv-operations.js';

/** A change to a key, as a change's plan makes it: the log gives it its position and time. */
export interface KvEventDraft {
  readonly kind: 'kv';
  readonly operation: KvOperation;
  readonly namespace: string;
  readonly key: string;
  /** The version written, or the key's latest version when it changed otherwise. */
  readonly version: number;
  readonly type: ValueType;
  /** The versions acted on one by one (`versions`), and what was done to them. */
  readonly versions?: { readonly action: 'delete' | 'undelete' | 'destroy'; readonly of: number[] };
  /** The token id of the change's caller. */
  readonly actor: string;
}

/** A token revoked, with the tokens it created (and theirs) revoked in the same transaction. */
export interface TokenEventDraft {
  readonly kind: 'token';
  readonly operation: 'revoke';
  /** The token whose revocation was asked for. */
  readonly token_id: string;
  /** Every token this transaction revoked: it, if it was live, and its live descendants. */
  readonly revoked: readonly string[];
  readonly actor: string;
}

/** The keyring rotated: a new version is the active one. */
export interface KeyringEventDraft {
  readonly kind: 'keyring';
  readonly operation: 'rotate';
  /** The new active version. */
  readonly version: number;
  readonly actor: string;
}

export type EventDraft = KvEventDraft | TokenEventDraft | KeyringEventDraft;

/** An event as the log keeps it. */
export type StoredEvent = EventDraft & {
  readonly position: number;
  /** When its change was committed, near enough: when its plan ran (ms since the epoch). */
  readonly at: number;
};

/** The event of a change to the key as a whole: its latest version and type as the change found them. */
export function keyEvent(
  operation: KvOperation,
  ref: KeyRef,
  meta: KeyMeta,
  actor: string,
): KvEventDraft {
  return { kind: 'kv', operation, ...ref, version: meta.latest, type: meta.type, actor };
}

/** A plan that also says what events its change makes (none: it writes no event). */
export type LoggedPlan<T> = Plan<T> & { readonly events?: readonly EventDraft[] };

/**
 * `keys` and `plan` for `storage`.atomic, with the event log's positions taken too: the plan's events are
 * written at them, in its transaction. Where the storage has a sequence (PostgreSQL), positions it hands
 * the plan; else the next after the last position's record, which the plan reads and writes. `expected`
 * (what the caller read at `keys`) is extended likewise.
 */
export function withEvents<T>(
  { seal, storage }: { readonly seal: RecordSeal; readonly storage: StorageBackend },
  keys: readonly Uint8Array[],
  plan: (current: readonly (Uint8Array | undefined)[]) => LoggedPlan<T>,
  expected?: readonly (Uint8Array | undefined)[],
): [readonly Uint8Array[], PlanFn<T>, (readonly (Uint8Array | undefined)[])?] {
  const sequenced = hasPositionSequence(storage);
  const logged = (current: readonly (Uint8Array | undefined)[], positions?: Positions): Plan<T> => {
    const decided = plan(sequenced ? current : current.slice(0, keys.length));
    const events = decided.events ?? [];
    if (events.length === 0) return { writes: decided.writes, result: decided.result };
    if (sequenced && !positions) throw new Error('the storage handed the plan no positions');
    let position = positions ? 0 : lastPosition(seal, current[keys.length]);
    const at = Date.now();
    const writes: StorageWrite[] = [...decided.writes];
    for (const event of events) {
      position = positions ? positions.next() : position + 1;
      const key = eventKey(position);
      // A run that only counts (its writes not applied) needs the event's key, not its record.
      const value = positions?.counting
        ? NO_RECORD
        : seal.authenticate('event', key, packr.pack(packed(event, at)));
      writes.push({ op: 'put', key, value, guarded: true });
    }
    if (positions) return { writes, result: decided.result };
    const record = seal.authenticate('event-position', EVENT_POSITION_KEY, packPosition(position));
    // Known for the next change's plan only if it finds these very bytes (stored, then, by this one).
    knownRecord.set(seal, { bytes: record, position });
    writes.push({ op: 'put', key: EVENT_POSITION_KEY, value: record });
    return { writes, result: decided.result };
  };
  if (sequenced) return [keys, logged, expected];
  return [[...keys, EVENT_POSITION_KEY], logged, expected && [...expected, undefined]];
}

/**
 * The position record this process last wrote or checked, by seal, and its position: the next change's
 * plan finds the same bytes when no other process wrote since, and its MAC need not be computed again (a
 * store's record keys never change: record-seal.ts). Compared in constant time.
 */
const knownRecord = new WeakMap<
  RecordSeal,
  { readonly bytes: Buffer; readonly position: number }
>();

function isKnown(seal: RecordSeal, bytes: Uint8Array): number | undefined {
  const known = knownRecord.get(seal);
  if (!known || known.bytes.length !== bytes.byteLength) return undefined;
  return timingSafeEqual(known.bytes, bytes) ? known.position : undefined;
}

/** The last position given, from its record (0 before the first event). */
function lastPosition(seal: RecordSeal, bytes: Uint8Array | undefined): number {
  if (bytes === undefined) return 0;
  const known = isKnown(seal, bytes);
  if (known !== undefined) return known;
  const position = Number(
    seal.verified('event-position', EVENT_POSITION_KEY, bytes).readBigUInt64BE(0),
  );
  // A copy: the storage may reuse the buffer it read into.
  knownRecord.set(seal, { bytes: Buffer.from(bytes), position });
  return position;
}

function packPosition(position: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(BigInt(position));
  return out;
}

/**
 * The position of the last event kept, for numbering on after it: 0 when its record fails its check (a
 * stream that reaches it says so; the server still starts, numbering on after the position's record).
 */
function keptPosition(seal: RecordSeal, key: Uint8Array, value: Uint8Array): number {
  try {
    return opened(seal, key, value).position;
  } catch (err) {
    if (err instanceof RecordIntegrityError) return 0;
    throw err;
  }
}

/** An event record's fields, MAC-checked. */
function opened(seal: RecordSeal, key: Uint8Array, value: Uint8Array): StoredEvent {
  const fields = packr.unpack(seal.verified('event', key, value)) as Record<string, unknown>;
  return unpacked(positionOf(key), fields);
}

/** The fields an event record packs (short names), built without spreading: it runs on every change. */
function packed(event: EventDraft, at: number): Record<string, unknown> {
  switch (event.kind) {
    case 'kv': {
      const fields: Record<string, unknown> = {
        k: event.kind,
        o: event.operation,
        a: event.actor,
        at,
        n: event.namespace,
        y: event.key,
        v: event.version,
        t: event.type,
      };
      if (event.versions) {
        fields.vs = event.versions.of;
        fields.va = event.versions.action;
      }
      return fields;
    }
    case 'token':
      return {
        k: event.kind,
        o: event.operation,
        a: event.actor,
        at,
        s: event.token_id,
        r: event.revoked,
      };
    case 'keyring':
      return { k: event.kind, o: event.operation, a: event.actor, at, v: event.version };
  }
}

function unpacked(position: number, r: Record<string, unknown>): StoredEvent {
  const common = { position, at: r.at as number, actor: r.a as string };
  if (r.k === 'token')
    return {
      ...common,
      kind: 'token',
      operation: 'revoke',
      token_id: r.s as string,
      revoked: r.r as string[],
    };
  if (r.k === 'keyring')
    return { ...common, kind: 'keyring', operation: 'rotate', version: r.v as number };
  return {
    ...common,
    kind: 'kv',
    operation: r.o as KvOperation,
    namespace: r.n as string,
    key: r.y as string,
    version: r.v as number,
    type: r.t as ValueType,
    ...(Array.isArray(r.vs)
      ? {
          versions: {
            action: r.va as 'delete' | 'undelete' | 'destroy',
            of: r.vs as number[],
          },
        }
      : {}),
  };
}

/** Reading the log, and pruning it. */
export class EventLog {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    /** The keyring (keyring-store.ts): refuses a read while it cannot be trusted. */
    private readonly keyring: { guard(): void },
  ) {}

  /**
   * Whether a read waits for the settled position (a storage with a sequence: PostgreSQL), which costs
   * round trips of its own: a reader that follows the log closely spaces its reads (kv/event-feed.ts).
   */
  get settlesReads(): boolean {
    return hasPositionSequence(this.storage);
  }

  /**
   * Calls `listener` when another server's change moved the log on (PostgreSQL announces the position's
   * record), and with true after a gap in which such news may have been lost; nothing where the storage
   * cannot tell (LMDB: one host, whose processes tell each other). Returns the function that stops it.
   */
  onMoved(listener: (gap: boolean) => void): () => void {
    if (!hasChangeFeed(this.storage)) return () => undefined;
    // A commit that wrote events is announced as the events' prefix, once (store.ts).
    return this.storage.onChange((key) => {
      if (key === undefined) listener(true);
      else if (Buffer.from(key).equals(EVENTS_RANGE.start)) listener(false);
    });
  }

  /** Up to `limit` events after `position`, in order; a record that fails its check is an integrity error. */
  async after(position: number, limit: number): Promise<StoredEvent[]> {
    return (await this.read(position, limit)).events;
  }

  /**
   * Up to `limit` events after `position`, in order, and the position `through` which they are all there
   * is to read: no event at or below it but those read (or before `position`) will ever be found. (A
   * reader after `through` reads what comes next; positions may be missing between events on PostgreSQL,
   * never to be filled.)
   */
  async read(
    position: number,
    limit: number,
  ): Promise<{ readonly events: StoredEvent[]; readonly through: number }> {
    this.keyring.guard();
    const settled = hasPositionSequence(this.storage)
      ? await this.storage.settledPosition()
      : undefined;
    const range = eventsFrom(position + 1);
    const end = settled === undefined ? range.end : eventKey(Math.max(position, settled) + 1);
    const events: StoredEvent[] = [];
    for await (const { key, value } of this.storage.scan({ start: range.start, end, limit }))
      events.push(opened(this.seal, key, value));
    const last = events.at(-1)?.position ?? position;
    // A full page: what follows its last event is still to read. Else, where positions follow commit
    // order (LMDB), its last event is as far as the log went; with a sequence, the settled position.
    const through =
      events.length === limit || settled === undefined ? last : Math.max(last, settled);
    return { events, through };
  }

  /**
   * The oldest position still kept and the last given (oldest is last + 1 when none is kept): a reader
   * after a position below oldest − 1 has missed events that were pruned. With a sequence (PostgreSQL),
   * "the last given" is the settled position (a position may stand for no event: see `read`).
   */
  async horizon(): Promise<{ readonly oldest: number; readonly last: number }> {
    this.keyring.guard();
    const last = hasPositionSequence(this.storage)
      ? await this.storage.settledPosition()
      : lastPosition(this.seal, await this.storage.get(EVENT_POSITION_KEY));
    for await (const { key } of this.storage.scan({
      start: EVENTS_RANGE.start,
      end: eventKey(last + 1),
      limit: 1,
    }))
      return { oldest: positionOf(key), last };
    return { oldest: last + 1, last };
  }

  /**
   * Makes the next position follow every position the store holds, when a server prepares the store: the
   * last position's record and the last event kept may disagree in a store copied or restored from one
   * whose positions came from a sequence (PostgreSQL), which keeps no record, or in a PostgreSQL store
   * whose events were numbered by the record. LMDB: the record is moved up to the last event; PostgreSQL:
   * the sequence is moved past both.
   */
  async alignPositions(): Promise<void> {
    this.keyring.guard();
    const { value, last } = await this.storage.getWithLast(EVENT_POSITION_KEY, EVENTS_RANGE);
    const recorded = lastPosition(this.seal, value);
    const kept = last ? keptPosition(this.seal, last.key, last.value) : 0;
    const position = Math.max(recorded, kept);
    if (hasPositionSequence(this.storage)) return this.storage.positionsAfter(position);
    if (kept <= recorded) return;
    await this.storage.atomic([EVENT_POSITION_KEY], ([bytes]) => {
      if (lastPosition(this.seal, bytes) >= kept) return { writes: [], result: undefined };
      const record = this.seal.authenticate(
        'event-position',
        EVENT_POSITION_KEY,
        packPosition(kept),
      );
      return { writes: [{ op: 'put', key: EVENT_POSITION_KEY, value: record }], result: undefined };
    });
  }

  /**
   * Deletes the events committed before `before` (ms since the epoch), oldest first, at most `batch` in
   * one transaction; how many it deleted (fewer than `batch`: none older is left).
   */
  async prune(before: number, batch: number): Promise<number> {
    this.keyring.guard();
    const old: Uint8Array[] = [];
    for await (const { key, value } of this.storage.scan({ ...EVENTS_RANGE, limit: batch })) {
      const event = opened(this.seal, key, value);
      if (event.at >= before) break;
      old.push(key);
    }
    if (old.length === 0) return 0;
    await this.storage.atomic(old, () => ({
      writes: old.map((key) => ({ op: 'delete' as const, key })),
      result: undefined,
    }));
    return old.length;
  }
}
