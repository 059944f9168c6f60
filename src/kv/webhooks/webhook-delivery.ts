/**
 * One webhook's delivery: the event log's events after the webhook's cursor, in order, those its filters
 * select each sent as one signed message (webhook-send.ts), one at a time — the next only once the
 * receiver took this one, so a key's events arrive in the order they happened. A failed attempt is tried
 * again after a jittered backoff (1 s doubling to 30 s), for as long as it takes: nothing is skipped for a
 * receiver that is down. The cursor is stored at most every second and when the delivery stops, so a
 * crash or a change of the delivering process repeats at most the last second's messages, with the same
 * webhook-id (at least once, never lost). Every attempt is one audit entry; a receiver that starts or stops
 * failing is one line in the server's log.
 *
 * Woken by a change, a delivery reads through the process's event feed (kv/event-feed.ts), which the
 * event streams share: one read of the log serves every webhook and stream woken by the same changes
 * (spaced on PostgreSQL, where a read waits for the settled position). Not woken — its first read, and
 * each IDLE_MS of quiet — it reads the log itself, so news the process missed is found all the same.
 */
import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { type NamespacePattern, parsePattern } from '../../auth/patterns.js';
import type { EventKindName } from '../../model/kv-operations.js';
import type { EventLog, StoredEvent } from '../../store/event-log.js';
import type { WebhookRecord, WebhookRecords } from '../../store/webhook-records.js';
import type { EventFeed } from '../event-feed.js';
import { type EventFilter, kindName, messageOf, selects } from '../event-stream.js';
import type { Hold } from '../key-changes.js';
import { parseDestination } from './destination.js';
import { type Attempt, sendMessage, type WebhookMessage } from './webhook-send.js';

/** Events read from the log at once. */
const PAGE = 100;
const FIRST_RETRY_MS = 1_000;
const LAST_RETRY_MS = 30_000;
/** The cursor is stored at most this often while messages go out. */
const SAVE_EVERY_MS = 1_000;
/** A quiet delivery reads the log this often even when nothing woke it. */
const IDLE_MS = 5_000;

/** Where each attempt's audit entry goes (the audit log's operator entries). */
export interface WebhookAudit {
  event(event: string, fields: Record<string, unknown>): Promise<boolean>;
}

export interface DeliveryDeps {
  readonly log: EventLog;
  /** The process's one reader of the log's newest events, shared with the event streams. */
  readonly feed: Pick<EventFeed, 'after'>;
  readonly records: Pick<WebhookRecords, 'cursor' | 'advance'>;
  readonly audit: WebhookAudit | undefined;
  readonly logger: Logger;
  readonly allowPrivate: boolean;
  readonly userAgent: string;
  /**
   * How long this process still holds the delivery lease (ms; webhook-dispatch.ts): an attempt ends
   * before the lease does, so that no two processes ever send at once. Unbounded when not given.
   */
  readonly leaseLeft?: () => number;
}

/** An attempt ends this long before the lease as last renewed (and starts only with twice it left). */
const LEASE_MARGIN_MS = 1_000;

/** What the metrics show of a delivery. */
export interface DeliveryState {
  readonly name: string;
  readonly delivered: number;
  readonly failed: number;
  readonly failing: boolean;
  /** Events in the log after the cursor, as last seen (those the filters leave out included). */
  readonly behind: number;
}

/** The message of an event: its id is the same at every attempt, and names the event's commit time too. */
function eventMessage(event: StoredEvent): WebhookMessage {
  return {
    id: `evt_${event.position}_${event.at}`,
    type: event.kind === 'kv' ? `kv.${event.operation}` : kindName(event),
    data: messageOf(event),
  };
}

/** `record`'s filters as a stream's (event-stream.ts): none or empty is every namespace, every key's change. */
function webhookFilter(record: WebhookRecord): EventFilter {
  const namespaces = record.namespaces
    .map(parsePattern)
    .filter((p): p is NamespacePattern => p !== null);
  return {
    ...(namespaces.length > 0 ? { namespaces } : {}),
    ...(record.kinds.length > 0 ? { kinds: record.kinds as EventKindName[] } : {}),
  };
}

export class WebhookDelivery {
  private readonly stopping = new AbortController();
  private running: Promise<void> = Promise.resolve();
  private cursor = 0;
  private saved = 0;
  private savedAt = 0;
  private latest = 0;
  private delivered = 0;
  private failed = 0;
  private failing = false;
  /** Its run ended on its own (the storage failed it): the dispatcher starts it again. */
  ended = false;
  private readonly filter: EventFilter;
  /** Whether the last wait ended on a change (read through the feed) or not (read the log itself). */
  private woken = false;

  constructor(
    readonly name: string,
    readonly record: WebhookRecord,
    private readonly deps: DeliveryDeps,
    private readonly follow: Hold,
  ) {
    this.filter = webhookFilter(record);
  }

  state(): DeliveryState {
    return {
      name: this.name,
      delivered: this.delivered,
      failed: this.failed,
      failing: this.failing,
      behind: Math.max(0, this.latest - this.cursor),
    };
  }

  start(): void {
    this.running = this.run()
      .catch((err: Error) =>
        this.deps.logger.error(
          { event: 'webhook.delivery_stopped', webhook: this.name, reason: err.message },
          'webhook %s stopped delivering; it starts again from its stored cursor',
          this.name,
        ),
      )
      .finally(() => {
        this.ended = true;
      });
  }

  /** Stops now — an attempt in flight is ended, not waited for — and stores how far it got. */
  async close(): Promise<void> {
    this.stopping.abort();
    await this.running;
    this.follow.release();
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    const { log, records } = this.deps;
    // What a sibling worker changes reaches this process once its relay has taken the delivery's wait.
    await this.follow.ready;
    const { last } = await log.horizon();
    const stored = await records.cursor(this.name, this.record.id);
    // A cursor past the log's last position: the store was put back to an older state. What is numbered
    // from here on is new: delivered from the log's last position, said in the audit log.
    if (stored !== undefined && stored > last)
      await this.audit('webhook.cursor_ahead', { cursor: stored, last });
    this.cursor = stored === undefined || stored > last ? last : stored;
    this.saved = this.cursor;
    this.latest = last;
    try {
      while (!this.stopped) {
        const events = await this.read();
        if (events === undefined) continue;
        const first = events[0];
        if (first && first.position > this.cursor + 1 && (await this.pruned()))
          // Pruned (older than the retention) before they were delivered: said, then passed.
          await this.audit('webhook.events_expired', {
            after: this.cursor,
            next: first.position,
          });
        for (const event of events) {
          if (selects(this.filter, event) && !(await this.deliver(event))) return;
          this.cursor = event.position;
          this.latest = Math.max(this.latest, event.position);
          if (Date.now() - this.savedAt >= SAVE_EVERY_MS) await this.save();
        }
        if (events.length < PAGE) {
          await this.save();
          this.woken = await this.follow.next(Date.now() + IDLE_MS, this.stopping.signal);
        }
      }
    } finally {
      await this.save().catch(() => undefined);
    }
  }

  /**
   * Whether events after the cursor were pruned: positions the log never used (on PostgreSQL: store/event-log.ts)
   * also leave a gap before the next event, but the oldest event kept is then not past the cursor.
   */
  private async pruned(): Promise<boolean> {
    const horizon = await this.deps.log.horizon().catch(() => null);
    return horizon !== null && horizon.oldest > this.cursor + 1;
  }

  /** The next page of events, or undefined after the storage failed to give it (tried again shortly). */
  private async read(): Promise<StoredEvent[] | undefined> {
    try {
      const reader = this.woken ? this.deps.feed : this.deps.log;
      return await reader.after(this.cursor, PAGE);
    } catch (err) {
      this.deps.logger.warn(
        { event: 'webhook.read_failed', webhook: this.name, reason: (err as Error).message },
        'webhook %s cannot read the event log now; it tries again',
        this.name,
      );
      await pause(FIRST_RETRY_MS, this.stopping.signal);
      return undefined;
    }
  }

  /** Sends `event` until the receiver takes it; false when the delivery stopped first. */
  private async deliver(event: StoredEvent): Promise<boolean> {
    const message = eventMessage(event);
    const url = parseDestination(this.record.url);
    for (let attempt = 1; !this.stopped; attempt++) {
      if ((this.deps.leaseLeft?.() ?? Number.POSITIVE_INFINITY) < 2 * LEASE_MARGIN_MS) {
        // The lease is about to end unrenewed: send nothing another process might send too.
        attempt--;
        await pause(LEASE_MARGIN_MS / 2, this.stopping.signal);
        continue;
      }
      const result = await this.attempt(url, message);
      if (this.stopped && !result.delivered) return false;
      await this.audit('webhook.delivery', {
        position: event.position,
        message_id: message.id,
        attempt,
        delivered: result.delivered,
        ...(result.status === undefined ? {} : { status: result.status }),
        ...(result.error === undefined ? {} : { error: result.error }),
        ms: result.ms,
      });
      if (result.delivered) {
        this.delivered++;
        this.recovered();
        return true;
      }
      this.failed++;
      this.failedAttempt(result);
      this.latest = Math.max(
        this.latest,
        (await this.deps.log.horizon().catch(() => null))?.last ?? 0,
      );
      const base = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempt - 1, 10));
      // Equal jitter: between half the backoff and all of it, drawn from the CSPRNG.
      await pause(base / 2 + randomInt(Math.floor(base / 2) + 1), this.stopping.signal);
    }
    return false;
  }

  /**
   * One attempt, ended at once when the delivery stops or when the lease is about to end unrenewed (this
   * process stalled, or another took it): only the holder of a live lease ever sends.
   */
  private async attempt(url: URL, message: WebhookMessage): Promise<Attempt> {
    const ended = new AbortController();
    const stop = () => ended.abort();
    this.stopping.signal.addEventListener('abort', stop, { once: true });
    const leaseLeft = this.deps.leaseLeft;
    const watch =
      leaseLeft &&
      setInterval(() => {
        if (leaseLeft() < LEASE_MARGIN_MS) ended.abort();
      }, LEASE_MARGIN_MS / 4);
    try {
      return await sendMessage(url, this.record.secret, message, {
        ...this.deps,
        signal: ended.signal,
      });
    } finally {
      if (watch) clearInterval(watch);
      this.stopping.signal.removeEventListener('abort', stop);
    }
  }

  private failedAttempt(result: Attempt): void {
    if (this.failing) return;
    this.failing = true;
    this.deps.logger.warn(
      { event: 'webhook.failing', webhook: this.name, reason: result.error },
      'webhook %s is not taking messages; they wait, in order, and are sent again',
      this.name,
    );
  }

  private recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.deps.logger.info(
      { event: 'webhook.recovered', webhook: this.name },
      'webhook %s takes messages again',
      this.name,
    );
  }

  private async save(): Promise<void> {
    this.savedAt = Date.now();
    if (this.cursor <= this.saved) return;
    await this.deps.records.advance(this.name, this.record.id, this.cursor);
    this.saved = this.cursor;
  }

  private async audit(event: string, fields: Record<string, unknown>): Promise<void> {
    await this.deps.audit?.event(event, { webhook: this.name, ...fields }).catch(() => false);
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
