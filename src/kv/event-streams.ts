/**
 * The event streams of this server (GET /v1/events: routes/kv-events.ts): each opened on the event log
 * (store/event-log.ts) and woken by the kv feature's changes (key-changes.ts), and the audit entry that
 * says how each ended.
 */
import type { Principal } from '../auth/principal.js';
import type { EventLog } from '../store/event-log.js';
import { CallerChecks, EventFeed, READ_GAP_MS } from './event-feed.js';
import { type EventFilter, type EventSink, EventStream } from './event-stream.js';
import type { Hold, KeyChanges } from './key-changes.js';

export { type NamespacePattern, parsePattern } from '../auth/patterns.js';

/** How a stream ended, for its closing audit entry. */
export interface StreamEnd {
  readonly after: number;
  readonly delivered: number;
  readonly reached: number;
  /**
   * The client went, the server stopped, the token no longer held, an event failed its check, or the
   * storage could not be read.
   */
  readonly ended: 'gone' | 'closed' | 'unauthorized' | 'integrity_error' | 'unavailable';
}

/** Where a stream's closing entry goes: the audit log's operator events (audit/audit-log.ts). */
export interface StreamAudit {
  event(event: string, fields: Record<string, unknown>): Promise<boolean>;
}

export class EventStreams {
  /** This process's one reader of the log, for all its streams and its webhooks' deliveries. */
  readonly feed: EventFeed;
  private readonly checks = new CallerChecks();

  constructor(
    private readonly deps: {
      readonly log: EventLog;
      readonly changes: KeyChanges;
      readonly audit: StreamAudit | undefined;
    },
  ) {
    const feed = new EventFeed(deps.log, deps.log.settlesReads ? READ_GAP_MS : 0);
    deps.changes.onAnyChange(() => feed.moved());
    this.feed = feed;
  }

  /**
   * A stream of what `filter` selects, for token `tokenId`'s holder as `caller()` finds it at each
   * delivery.
   */
  open(filter: EventFilter, tokenId: string, caller: () => Promise<Principal>): EventStream {
    return new EventStream(
      { ...this.deps, feed: this.feed, checks: this.checks },
      filter,
      tokenId,
      caller,
    );
  }

  /**
   * Runs `stream` from `after` (EventStream.run), and once it has ended writes the one audit entry that
   * says how: request `requestId`'s, by `tokenId`. Resolves with why it ended; the storage failing it is
   * `unavailable`.
   */
  async follow(
    stream: EventStream,
    after: number,
    sink: EventSink,
    hold: Hold,
    who: { readonly requestId: string; readonly tokenId: string },
  ): Promise<StreamEnd['ended']> {
    const ended = await stream.run(after, sink, hold).catch(() => 'unavailable' as const);
    const end: StreamEnd = {
      after,
      delivered: stream.delivered,
      reached: stream.reached,
      ended,
    };
    await this.deps.audit
      ?.event('events.stream_closed', {
        request_id: who.requestId,
        token_id: who.tokenId,
        ...end,
      })
      .catch(() => undefined);
    return ended;
  }
}
