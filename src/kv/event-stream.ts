/**
 * One caller's stream of change events (GET /v1/events, routes/kv-events.ts): the event log's events
 * (store/event-log.ts) after a position, in order, those the filters select and the caller may read — its
 * rights checked again before every batch, so a token revoked, expired or narrowed meanwhile hears no more
 * than it may now (a credential that no longer holds ends the stream). Woken by every change this server
 * hears of (kv/key-changes.ts: its own writes, its siblings', other servers' on PostgreSQL), it reads the
 * log from where it is (through the process's one reader, event-feed.ts); between changes it sends a
 * heartbeat. A stream holds one of the server's wait slots (COFFER_MAX_WAITS, with the same per-token and
 * per-address shares), for as long as it is open, and gives it back when it ends.
 */
import { type NamespacePattern, patternMatches } from '../auth/patterns.js';
import type { Principal } from '../auth/principal.js';
import { AppError } from '../errors.js';
import type { EventKindName } from '../model/kv-operations.js';
import type { EventLog, KvOperation, StoredEvent } from '../store/event-log.js';
import { RecordIntegrityError } from '../store/record-seal.js';
import { iso } from './entries.js';
import type { CallerChecks, EventFeed } from './event-feed.js';
import type { Hold, KeyChanges, WaitHolder } from './key-changes.js';

/** Events read from the log at once. */
const PAGE = 500;
/** How long a stream is quiet before a heartbeat (a comment line) keeps proxies from closing it. */
export const HEARTBEAT_MS = 15_000;

/**
 * Which events a stream selects: namespace patterns as scopes write them (`*`, `a/*`: a and beneath, `b/c`:
 * exactly; auth/patterns.ts) and kinds (a key's operations, `token.revoke`, `keyring.rotate`). Absent: every
 * change to a key; a token's revocation or the keyring's rotation only when `kinds` names it.
 */
export interface EventFilter {
  readonly namespaces?: readonly NamespacePattern[];
  readonly kinds?: readonly EventKindName[];
}

interface MessageBase {
  readonly position: number;
  /** When its change committed (ISO 8601, ms). */
  readonly at: string;
  /** The token id of who made it. */
  readonly actor: string;
}

/** A change to a key, as a stream sends it. */
export type KvEventMessage = MessageBase & {
  readonly kind: 'kv';
  readonly operation: KvOperation;
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: string;
  readonly versions?: { readonly action: string; readonly of: number[] };
};

/** An event as a stream sends it: no value, ever. */
export type EventMessage =
  | KvEventMessage
  | (MessageBase & {
      readonly kind: 'token';
      readonly operation: 'revoke';
      readonly token_id: string;
      readonly revoked: readonly string[];
    })
  | (MessageBase & {
      readonly kind: 'keyring';
      readonly operation: 'rotate';
      readonly version: number;
    });

/** The name `kinds` selects an event by: a key's operation, or `token.revoke`, `keyring.rotate`. */
export function kindName(event: StoredEvent | EventMessage): EventKindName {
  return event.kind === 'kv'
    ? event.operation
    : (`${event.kind}.${event.operation}` as EventKindName);
}

/**
 * Whether `principal` may hear of `event`: a key's change if it may read values of its type in its
 * namespace; a revocation if it may list tokens; a rotation if it may read the keyring's status.
 */
function mayHear(principal: Principal, event: StoredEvent): boolean {
  switch (event.kind) {
    case 'kv':
      return principal.access.may('read', event.namespace, event.type);
    case 'token':
      return principal.privileges.has('list_tokens') || principal.privileges.has('manage_tokens');
    case 'keyring':
      return principal.privileges.has('read_keyring') || principal.privileges.has('manage_keyring');
  }
}

/** Where a stream's events go, and how it learns that the client went away. */
export interface EventSink {
  send(message: EventMessage): void;
  heartbeat(): void;
  /** Fires when the client has gone (the response closed). */
  readonly gone: AbortSignal;
}

/** 410: the position asked to resume after is older than what the log keeps. */
export function eventsExpired(oldest: number): AppError {
  return new AppError(
    'events_expired',
    `the events after that position are no longer kept (the oldest kept is ${oldest}): read the state again, then follow the stream from now`,
  );
}

export class EventStream {
  /** How many events it sent. */
  delivered = 0;
  /** The last position it read past (sent or left out). */
  reached = 0;

  constructor(
    private readonly deps: {
      readonly log: EventLog;
      readonly feed: EventFeed;
      readonly checks: CallerChecks;
      readonly changes: KeyChanges;
    },
    private readonly filter: EventFilter,
    /** The caller's token id, and the caller as its credential stands now (throws once it no longer holds). */
    private readonly tokenId: string,
    private readonly caller: () => Promise<Principal>,
  ) {}

  /**
   * The position a stream resumes after: `after` when given, else the log's last (only what comes next).
   * 410 when `after` is older than the log keeps, or beyond its last position (the store was put back to an
   * older state, a snapshot say: what the client holds is not what the store holds).
   */
  async start(after: number | undefined): Promise<number> {
    const { oldest, last } = await this.deps.log.horizon();
    if (after === undefined) return last;
    if (after + 1 < oldest) throw eventsExpired(oldest);
    if (after > last)
      throw new AppError(
        'events_expired',
        `no event has that position yet: the last is ${last} (the store was put back to an older state?): read the state again, then follow the stream from now`,
      );
    return after;
  }

  /** The stream's wait slot (429 when this server, this token or this address holds its share). */
  reserve(holder: WaitHolder): Hold {
    return this.deps.changes.hold('', undefined, holder, true);
  }

  /**
   * Sends every selected event after `position` as it comes, until the client goes, the server stops, the
   * caller's credential no longer holds or an event fails its check. Resolves with why it ended; rejects
   * when the storage cannot be read (the route says so).
   */
  async run(
    position: number,
    sink: EventSink,
    hold: Hold,
  ): Promise<'gone' | 'closed' | 'unauthorized' | 'integrity_error'> {
    this.reached = position;
    try {
      // What a sibling worker changes reaches this process once its relay has taken the stream's wait.
      await hold.ready;
      for (;;) {
        let events: StoredEvent[];
        try {
          events = await this.deps.feed.after(this.reached, PAGE);
        } catch (err) {
          // An event that fails its check (changed, or moved): the stream ends there, saying why.
          if (err instanceof RecordIntegrityError) return 'integrity_error';
          throw err;
        }
        const selected = events.filter((event) => this.selects(event));
        if (selected.length > 0) {
          // Rights as they stand now: checked once for the streams of this token woken by this change.
          const principal = await this.callerNow(this.deps.feed.round);
          if (!principal) return 'unauthorized';
          if (sink.gone.aborted) return 'gone';
          for (const event of selected)
            if (mayHear(principal, event)) {
              sink.send(shared(event));
              this.delivered++;
            }
        }
        if (events.length > 0) {
          this.reached = events.at(-1)!.position;
          if (events.length === PAGE) continue;
        }
        if (sink.gone.aborted) return 'gone';
        const woken = await hold.next(Date.now() + HEARTBEAT_MS, sink.gone);
        if (sink.gone.aborted) return 'gone';
        if (!woken) {
          // Quiet for a while, or the server is stopping (which wakes no one: the slot says so).
          if (this.deps.changes.closing) return 'closed';
          if (!(await this.callerNow())) return 'unauthorized';
          sink.heartbeat();
        }
      }
    } finally {
      hold.release();
    }
  }

  /**
   * The caller now; undefined once its credential no longer holds (a storage failure is thrown on). With
   * `round` (the change that woke it), a check made for another stream of the same token woken by the
   * same change serves this one too.
   */
  private async callerNow(round?: number): Promise<Principal | undefined> {
    try {
      return await (round === undefined
        ? this.caller()
        : this.deps.checks.check(this.tokenId, round, this.caller));
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthorized') return undefined;
      throw err;
    }
  }

  private selects(event: StoredEvent): boolean {
    return selects(this.filter, event);
  }
}

/**
 * Whether `filter` selects `event` (a stream's, or a webhook's): a key's change by namespace and
 * operation; a token's revocation or the keyring's rotation only when `kinds` names it.
 */
export function selects({ namespaces, kinds }: EventFilter, event: StoredEvent): boolean {
  if (event.kind !== 'kv') return kinds?.includes(kindName(event)) ?? false;
  return (
    (!namespaces || namespaces.some((p) => patternMatches(p, event.namespace))) &&
    (!kinds || kinds.includes(event.operation))
  );
}

/**
 * The message of `event`, made once for every stream that sends it (the feed hands the same event to all
 * of them): a sink may keep what it makes of a message (its framing) by the message, too.
 */
const messages = new WeakMap<StoredEvent, EventMessage>();
function shared(event: StoredEvent): EventMessage {
  let message = messages.get(event);
  if (message === undefined) {
    message = messageOf(event);
    messages.set(event, message);
  }
  return message;
}

export function messageOf(event: StoredEvent): EventMessage {
  const at = iso(event.at);
  switch (event.kind) {
    case 'kv':
      return {
        position: event.position,
        kind: 'kv',
        operation: event.operation,
        namespace: event.namespace,
        key: event.key,
        version: event.version,
        type: event.type,
        ...(event.versions ? { versions: event.versions } : {}),
        at,
        actor: event.actor,
      };
    case 'token':
      return {
        position: event.position,
        kind: 'token',
        operation: 'revoke',
        token_id: event.token_id,
        revoked: event.revoked,
        at,
        actor: event.actor,
      };
    case 'keyring':
      return {
        position: event.position,
        kind: 'keyring',
        operation: 'rotate',
        version: event.version,
        at,
        actor: event.actor,
      };
  }
}
