/**
 * The PostgreSQL backend's position sequence (backend.ts, PositionSequence): the event log's positions
 * (store/event-log.ts), taken inside a group's transaction, so that groups commit side by side instead of
 * one after another behind a counter's lock.
 *
 * A writer that takes positions first holds a shared lock that only the barrier below takes exclusive,
 * then makes sure its transaction has an id (txid_current()), then takes its positions (nextval): so a
 * transaction holding a position always has an id, from before the position was taken.
 *
 * A reader asks how far positions are settled (settledPosition): it reads the sequence's last value L and
 * then takes a transaction id X of its own, ended at once — every writer that took a position ≤ L had its
 * id before, so below X. A snapshot taken after that lists every one of those still running. Once they
 * have all ended, every position ≤ L is settled: committed, or never to be (rolled back, or taken and not
 * used). Writers' transactions last a few milliseconds, so the wait is that long. A snapshot lists every
 * running transaction of the whole PostgreSQL cluster, not only Coffer's: should one of them stay open (a
 * session left in a transaction elsewhere), the reader stops waiting after BARRIER_AFTER_MS and takes the
 * barrier — the lock every position-taking writer holds shared, taken exclusive, which waits only for
 * Coffer's writers — and reads L under it. It asks for that lock for BARRIER_WAIT_MS at most: while it
 * waits, PostgreSQL queues every writer's shared request behind it, so one Coffer writer held up in its
 * transaction (a row of the table locked by another session, a server whose connection hangs) would
 * otherwise hold every write of the store for as long. Not granted in time, the reader goes back to
 * waiting on the running transactions, and tries the lock again BARRIER_AFTER_MS later; no event is
 * passed meanwhile.
 */
import type pg from 'pg';
import { isLockNotAvailable, unavailable } from './postgres-errors.js';
import { checkout } from './postgres-group.js';

/** How long a reader waits on running transactions before it takes the barrier instead. */
const BARRIER_AFTER_MS = 200;
/** How long the barrier's lock is waited for (writers queue behind the wait) before the reader gives up. */
const BARRIER_WAIT_MS = 100;
/** How often a reader looks again at the running transactions it waits on. */
const POLL_MS = 2;

/** The sequence's last value given: 0 before the first. */
const LAST = (sequence: string): string =>
  `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS l FROM ${sequence}`;

export class PostgresPositions {
  private running: Promise<number> | null = null;
  private queued: Promise<number> | null = null;

  constructor(
    private readonly pool: pg.Pool,
    /** The sequence, schema-qualified and quoted. */
    private readonly sequence: string,
    /** The statement that takes the barrier's lock exclusive (postgres-group-sql.ts). */
    private readonly barrierLock: string,
  ) {}

  /**
   * How far positions are settled. A call made while one is computing waits for the next computation,
   * which begins after it: never a value read before the call.
   */
  settledPosition(): Promise<number> {
    if (!this.running) return this.start();
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        return this.start();
      });
    return this.queued;
  }

  private start(): Promise<number> {
    const computing = this.compute().finally(() => {
      if (this.running === computing) this.running = null;
    });
    this.running = computing;
    return computing;
  }

  private async compute(): Promise<number> {
    // The sequence's last value, then a transaction id of the reader's own, given after that read and
    // ended with it: every writer that took a position ≤ last had an id below it.
    const [sequence, own] = (await this.query(
      `${LAST(this.sequence)}; SELECT txid_current()::text AS x`,
    )) as unknown as [pg.QueryResult<{ l: string }>, pg.QueryResult<{ x: string }>];
    const last = Number(sequence.rows[0]!.l);
    const below = BigInt(own.rows[0]!.x);
    // A snapshot taken after that id ended lists every transaction with a lower id still running. (One
    // taken before could be a backend's earlier snapshot reused, PostgreSQL 14 on: it may not know the
    // newest ids at all.)
    let waiting = [...(await this.runningIds())].filter((id) => id < below);
    let until = Date.now() + BARRIER_AFTER_MS;
    while (waiting.length > 0) {
      if (Date.now() >= until) {
        const settled = await this.underBarrier();
        if (settled !== undefined) return settled;
        until = Date.now() + BARRIER_AFTER_MS;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
      const still = await this.runningIds();
      waiting = waiting.filter((id) => still.has(id));
    }
    return last;
  }

  /** The transaction ids running now, in the whole cluster (a snapshot's xip list). */
  private async runningIds(): Promise<Set<bigint>> {
    const { rows } = await this.query<{ s: string }>('SELECT txid_current_snapshot()::text AS s');
    const xip = rows[0]!.s.split(':')[2] ?? '';
    return new Set(xip === '' ? [] : xip.split(',').map(BigInt));
  }

  /**
   * The sequence's last value read with every position-taking writer finished and none begun; undefined
   * when the barrier's lock was not granted within BARRIER_WAIT_MS.
   */
  private async underBarrier(): Promise<number | undefined> {
    try {
      return await this.inBarrier(async (client) => {
        const { rows } = await client.query<{ l: string }>(LAST(this.sequence));
        return Number(rows[0]!.l);
      });
    } catch (err) {
      if (isLockNotAvailable(err)) return undefined;
      throw err;
    }
  }

  /**
   * Moves the sequence past `position`, when a server prepares the store (store/event-log.ts). The sequence
   * only grows, so one already past it is left as it is, with no barrier: every start but the first on a
   * store copied in. Else it is set under the barrier, asked for as a reader asks for it (BARRIER_WAIT_MS
   * at a time, BARRIER_AFTER_MS apart): a Coffer write held up elsewhere delays this start, not every
   * write of the store.
   */
  async positionsAfter(position: number): Promise<void> {
    const { rows } = await this.query<{ l: string }>(LAST(this.sequence));
    if (Number(rows[0]!.l) >= position) return;
    for (;;) {
      try {
        return await this.inBarrier(async (client) => {
          const { rows } = await client.query<{ l: string }>(LAST(this.sequence));
          if (Number(rows[0]!.l) < position)
            await client.query('SELECT setval($1::regclass, $2)', [this.sequence, position]);
        });
      } catch (err) {
        if (!isLockNotAvailable(err)) throw err;
      }
      await new Promise((r) => setTimeout(r, BARRIER_AFTER_MS));
    }
  }

  /**
   * `work` in a transaction holding the barrier: no writer holds or takes a position meanwhile. The lock
   * is waited for BARRIER_WAIT_MS at most (then PostgreSQL's lock_not_available: isLockNotAvailable).
   */
  private async inBarrier<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const { client, release } = await checkout(this.pool);
    let broken = false;
    try {
      await client.query(`BEGIN; SET LOCAL lock_timeout = ${BARRIER_WAIT_MS}; ${this.barrierLock}`);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw unavailable(err);
    } finally {
      release(broken);
    }
  }

  private async query<R extends pg.QueryResultRow>(text: string): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text);
    } catch (err) {
      throw unavailable(err);
    }
  }
}
