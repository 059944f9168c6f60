/**
 * One reader of the event log per process, for all of its streams (event-stream.ts): when a change wakes
 * them, the first stream to ask reads the log once — each new event's record read and checked once — and
 * every other stream takes the same events from memory. The newest events are kept (up to KEEP); a stream
 * further behind than that (one resuming after a while) reads the log itself, as before. Without it, each
 * change made every open stream read and check the log: 1,000 streams, 1,000 reads.
 */
import type { Principal } from '../auth/principal.js';
import type { EventLog, StoredEvent } from '../store/event-log.js';

/** Events read from the log at once. */
const PAGE = 500;
/** The newest events kept in memory. */
const KEEP = 4096;
/**
 * The least time from one read of the log to the start of the next where a read is dear (a log whose
 * reads wait for the settled position: on PostgreSQL, several round trips: postgres-positions.ts): while
 * changes come faster than that, one read serves all of them, and an event waits at most this much
 * longer. Without it, each change made a read of its own and a check of each stream's token: 1,000 writes
 * a second for 10 s, 35,338 transactions in the database (the writes' own among them); 17,737 spaced
 * (one run each).
 */
export const READ_GAP_MS = 10;

export class EventFeed {
  /** The newest events read, in position order: every event after `since` and through `through`. */
  private recent: StoredEvent[] = [];
  /** Where `recent` begins (after it) and ends; undefined until the first read, which starts at the log's end. */
  private since: number | undefined;
  private through = 0;
  /** Changes heard (moved()), and how many of them the last finished read began after. */
  private heard = 1;
  private covered = 0;
  private reading: Promise<void> | null = null;
  /** When the last read of the log began (performance.now()). */
  private lastRead = -Infinity;

  constructor(
    private readonly log: Pick<EventLog, 'read' | 'after' | 'horizon'>,
    /** The least time from one read's start to the next's (READ_GAP_MS where reads are dear; else 0). */
    private readonly readGapMs: number,
  ) {}

  /** A change was committed or heard of: a reader that asks after this reads the log again. */
  moved(): void {
    this.heard++;
  }

  /** How many changes have been heard: the streams woken by one change see the same number. */
  get round(): number {
    return this.heard;
  }

  /** Up to `limit` events after `position`, in order: from memory when it holds them, else from the log. */
  async after(position: number, limit: number): Promise<StoredEvent[]> {
    await this.catchUp();
    if (this.since !== undefined && position >= this.since && position <= this.through) {
      const from = firstAfter(this.recent, position);
      return this.recent.slice(from, from + limit);
    }
    return this.log.after(position, limit);
  }

  /**
   * Waits for a read of the log that began after every change heard before this call: one read serves
   * every caller waiting meanwhile, and a caller never waits for changes heard after it asked.
   */
  private async catchUp(): Promise<void> {
    const need = this.heard;
    while (this.covered < need) {
      if (!this.reading) {
        let began = this.heard;
        this.reading = this.spaced()
          .then(() => {
            // Changes heard while it waited are covered by the read.
            began = this.heard;
            this.lastRead = performance.now();
            return this.read();
          })
          .catch(() => {
            // A record that fails its check, or the storage failing: the feed starts again from the
            // log's end, and until it has read past where a stream is, that stream reads the log itself
            // (meeting the failure, if it is its own, without stopping the streams beyond it).
            this.since = undefined;
            this.recent = [];
          })
          .then(() => {
            this.covered = Math.max(this.covered, began);
          })
          .finally(() => {
            this.reading = null;
          });
      }
      await this.reading;
    }
  }

  /** Resolves when a read may begin: `readGapMs` after the last one began. */
  private spaced(): Promise<void> {
    const wait = this.lastRead + this.readGapMs - performance.now();
    return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : Promise.resolve();
  }

  private async read(): Promise<void> {
    if (this.since === undefined) {
      this.since = (await this.log.horizon()).last;
      this.through = this.since;
    }
    for (;;) {
      const { events, through } = await this.log.read(this.through, PAGE);
      for (const event of events) this.recent.push(event);
      this.through = through;
      if (this.recent.length > KEEP) {
        const dropped = this.recent.length - KEEP;
        this.since = this.recent[dropped - 1]!.position;
        this.recent = this.recent.slice(dropped);
      }
      if (events.length < PAGE) return;
    }
  }
}

/** The index of the first of `events` (in position order) after `position`. */
function firstAfter(events: readonly StoredEvent[], position: number): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (events[mid]!.position <= position) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** How long one check of a token's rights may serve the other streams of that token woken with it. */
const CHECK_MS = 100;

/**
 * One check of a token's rights (its credential read again: authenticator.ts) for all of the streams of
 * that token woken by the same change, within CHECK_MS: 1,000 streams of one token, one check. A check
 * made before the change that wakes them is never reused, so a token revoked or narrowed before a change
 * is checked afresh for it.
 */
export class CallerChecks {
  private readonly checks = new Map<
    string,
    { readonly round: number; readonly at: number; readonly principal: Promise<Principal> }
  >();

  check(tokenId: string, round: number, caller: () => Promise<Principal>): Promise<Principal> {
    const now = Date.now();
    const known = this.checks.get(tokenId);
    if (known && known.round === round && now - known.at < CHECK_MS) return known.principal;
    if (this.checks.size >= 10_000) this.checks.clear();
    const principal = caller();
    this.checks.set(tokenId, { round, at: now, principal });
    return principal;
  }
}
