/**
 * The storage contract on PostgreSQL (node-postgres): one table of (key bytea, value bytea) in a schema of
 * its own, so several Coffer servers can share one database. bytea compares byte by byte, so key order is
 * the same as LMDB's.
 *
 *   get     one SELECT for all the point reads (get, getWithLast) asked for in one turn of the event loop
 *           (read-batch.ts): under load, the requests that arrived together share one round trip
 *   putOwn  one INSERT … ON CONFLICT, committed on its own (keys only their writer touches: no locks)
 *   scan    pages of PAGE rows in key order (keyset pagination: each page starts after the last key)
 *   atomic  a transaction that holds a lock per key the plan reads or writes (an advisory lock on a hash of
 *           the key: exclusive where the plan writes the key, shared where it only reads it), all taken
 *           at once in one global order, then reads the keys, runs the plan and commits its writes; the
 *           commit returns once PostgreSQL has made it durable (synchronous_commit = on). Two round trips:
 *           BEGIN, the locks and the read as one query of several statements, then the writes and COMMIT
 *           as another (their values written into the text as decode('<hex>', 'hex'): such a query takes
 *           no parameters). So no other write to those keys comes between the read and the writes — keys
 *           read but not written included (no write skew), and keys that do not exist yet, so creating a
 *           row is race-free. Writes asked for while earlier ones are still out share one transaction
 *           (group commit, write-batch.ts): their plans run one after another on what the ones before
 *           them wrote, as if each had committed on its own. (SERIALIZABLE was tried first: its page-level
 *           predicate locks made concurrent writes of new, neighbouring keys fail as serialization
 *           conflicts and run again three times each on average; see docs/performance.md.)
 *
 * The schema is created and upgraded by numbered migrations (postgres-schema.ts) when the backend opens,
 * under an advisory lock, so several servers starting together is safe; the SQL text of a group's
 * transaction is made by postgres-group-sql.ts and run by postgres-group.ts; what an error means, by
 * postgres-errors.ts.
 */
import { randomInt } from 'node:crypto';
import { userInfo } from 'node:os';
import pg from 'pg';
import {
  type ChangeFeed,
  type KeyRange,
  type PlanFn,
  type PositionSequence,
  type StorageBackend,
  type StorageEntry,
  type StorageGauges,
  StorageUnavailableError,
  type WriteObserver,
} from './backend.js';
import { isRetryable, unavailable } from './postgres-errors.js';
import { type Outcome, type PendingWrite, PositionsFor, runGroup } from './postgres-group.js';
import { GroupSql, type Locks, nameOf, want } from './postgres-group-sql.js';
import { type ChangeListener, PostgresListener } from './postgres-listener.js';
import { PostgresPositions } from './postgres-positions.js';
import { asBuffer, everythingOnce, scanPages } from './postgres-scans.js';
import { channelOf, migrate, SCHEMA_NAME } from './postgres-schema.js';
import { type PreparedStatements, preparedStatements } from './postgres-statements.js';
import { type Batch, type BatchAnswer, ReadBatcher } from './read-batch.js';
import { WriteGroups } from './write-batch.js';

export interface PostgresOptions {
  /** postgres://… ; when absent, node-postgres reads the standard PG* environment variables. */
  readonly connectionString?: string;
  /** The schema holding Coffer's tables (a plain lower-case identifier). */
  readonly schema: string;
  readonly poolSize: number;
  /** A statement that runs longer is cancelled (the request answers an error instead of hanging). */
  readonly statementTimeoutMs: number;
  /**
   * Keys whose writes are announced to every server (NOTIFY, in the writing transaction: delivered at its
   * commit) and heard through `onChange` (LISTEN, postgres-listener.ts).
   */
  readonly announce?: readonly Uint8Array[];
  /** Keys announced as `announce`'s are: every key that starts with one of these. */
  readonly announcePrefixes?: readonly Uint8Array[];
  /** A write of a key that starts with one of these is announced as the prefix, once per commit. */
  readonly announcePrefixesOnce?: readonly Uint8Array[];
}

/** Rows per page of a scan. */
const PAGE = 500;
const MAX_ATTEMPTS = 50;

export class PostgresBackend implements StorageBackend, ChangeFeed, PositionSequence {
  readonly remote = true;
  private closed = false;
  private readonly reads = new ReadBatcher((batch) => this.readBatch(batch));
  private readonly writes: WriteGroups<PendingWrite>;
  /** The SQL of a group's transaction. */
  private readonly groupSql: GroupSql;
  /** Named (prepared) statements: parsed and planned once per connection, not per query. */
  private readonly sql: PreparedStatements;
  private observer: WriteObserver | undefined;
  /** The event log's positions (postgres-positions.ts). */
  private readonly positions: PostgresPositions;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly table: string,
    private readonly sequence: string,
    announce: {
      readonly keys: readonly Uint8Array[];
      readonly prefixes: readonly Uint8Array[];
      readonly once: readonly Uint8Array[];
    },
    private readonly listener: PostgresListener,
    private readonly poolSize: number,
  ) {
    // Half the pool for transactions, the rest kept for reads; a group waits while that many are out.
    // Its keys are bounded too: each is an advisory lock in PostgreSQL's shared lock table (about
    // max_locks_per_transaction × max_connections, 6,400 by default, for every server at once).
    this.writes = new WriteGroups(
      {
        inFlight: Math.max(1, Math.floor(poolSize / 2)),
        maxMembers: 64,
        maxKeys: 1024,
        maxBytes: 8 * 1024 * 1024,
      },
      (group) => this.commitGroup(group),
    );
    this.groupSql = new GroupSql(
      table,
      channelOf(table),
      new Set(announce.keys.map(nameOf)),
      announce.prefixes.map(nameOf),
      announce.once.map(nameOf),
    );
    this.sql = preparedStatements(table);
    this.positions = new PostgresPositions(pool, sequence, this.groupSql.barrierLock());
  }

  /** Connects, creates or upgrades the schema, and returns the backend. */
  static async open(options: PostgresOptions): Promise<PostgresBackend> {
    if (!SCHEMA_NAME.test(options.schema))
      throw new Error(`the PostgreSQL schema name must match ${SCHEMA_NAME.source}`);
    const connection = {
      // As libpq does: the user name defaults to the operating system's (a URL or PGUSER names another).
      user: process.env.PGUSER ?? process.env.USER ?? userInfo().username,
      ...(options.connectionString ? { connectionString: options.connectionString } : {}),
      connectionTimeoutMillis: options.statementTimeoutMs,
    };
    const pool = new pg.Pool({
      ...connection,
      max: options.poolSize,
      statement_timeout: options.statementTimeoutMs,
      // Every commit waits until it is durable, whatever the server's default says.
      options: '-c synchronous_commit=on',
    });
    // An idle connection that breaks (the server restarted) is dropped by the pool, not thrown.
    pool.on('error', () => undefined);
    try {
      await migrate(pool, options.schema);
    } catch (err) {
      await pool.end();
      const cause = unavailable(err);
      // Said without the URL, which may hold a password.
      if (cause instanceof StorageUnavailableError)
        throw new Error(
          `cannot reach PostgreSQL (${(err as Error).message.slice(0, 120)}): check COFFER_PG_URL or the PG* variables, and that the database is up`,
        );
      throw err;
    }
    const table = `"${options.schema}".records`;
    const listener = new PostgresListener(connection, channelOf(table), (channel, payload) =>
      pool.query('SELECT pg_notify($1, $2)', [channel, payload]),
    );
    return new PostgresBackend(
      pool,
      table,
      `"${options.schema}".event_positions`,
      {
        keys: options.announce ?? [],
        prefixes: options.announcePrefixes ?? [],
        once: options.announcePrefixesOnce ?? [],
      },
      listener,
      options.poolSize,
    );
  }

  get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.reads.get(asBuffer(key));
  }

  getWithLast(
    key: Uint8Array,
    range: KeyRange,
  ): Promise<{ value: Uint8Array | undefined; last: StorageEntry | undefined }> {
    return this.reads.getWithLast(asBuffer(key), range);
  }

  /** One batch of point reads (read-batch.ts) as one statement. */
  private async readBatch(batch: Batch): Promise<BatchAnswer> {
    const { rows } = await this.query<{ w: number; i: number; k: Buffer; v: Buffer }>(
      this.sql.batch,
      [batch.keys, batch.ranges.map((r) => r.start), batch.ranges.map((r) => r.end)],
    );
    const values = new Map<string, Buffer>();
    const lasts = new Map<number, StorageEntry>();
    for (const row of rows) {
      if (row.w === 0) values.set(row.k.toString('latin1'), row.v);
      else lasts.set(row.i - 1, { key: row.k, value: row.v });
    }
    return { values, lasts };
  }

  /**
   * One statement: a recursive query that finds the first key of the range, takes its segment, and seeks
   * past that segment's keys (segment ‖ 0x02) for the next, as often as the outer LIMIT asks (PostgreSQL
   * evaluates a recursive query only as far as its reader reads).
   */
  async segments(prefix: Uint8Array, range: KeyRange & { limit: number }): Promise<Uint8Array[]> {
    const { rows } = await this.query<{ s: Buffer }>(this.sql.segments, [
      asBuffer(range.start),
      asBuffer(range.end),
      asBuffer(prefix),
      range.limit,
    ]);
    return rows.map((row) => row.s);
  }

  /** A query on a pooled connection; a connection failure becomes StorageUnavailableError. */
  private async query<R extends pg.QueryResultRow>(
    statement: { name: string; text: string },
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>({ ...statement, values });
    } catch (err) {
      throw unavailable(err);
    }
  }

  scan(range: KeyRange): AsyncIterable<StorageEntry> {
    return scanPages(range, PAGE, (statement, values) => this.query(statement, values), this.sql);
  }

  /** Pages of the whole table inside one REPEATABLE READ, READ ONLY transaction: one snapshot. */
  everything(): AsyncIterable<StorageEntry> {
    return everythingOnce(this.pool, this.table, PAGE);
  }

  /**
   * The plan runs first on the current values, read without locks (or on the caller's `expected` values),
   * to learn which keys it writes. Then, in
   * a transaction, it takes a lock per key it reads or writes — exclusive where it writes the key, shared
   * where it only reads it — all at once in one global order (so transactions never deadlock), reads the
   * keys again and runs the plan on those values: its writes commit with the locks held (strict two-phase
   * locking). A key only read (the keyring generation every write reads) is shared by concurrent plans and
   * excluded only by a plan that writes it; keys that do not exist yet are locked all the same, so creating
   * a row is race-free. Should the locked values make the plan write a key it does not hold exclusive, it
   * is run again, in a later transaction, with that key exclusive. The transaction may be shared with other
   * writes asked for at about the same time (write-batch.ts, `once`).
   */
  async atomic<T>(
    keys: readonly Uint8Array[],
    plan: PlanFn<T>,
    expected?: readonly (Uint8Array | undefined)[],
  ): Promise<T> {
    const started = this.observer && performance.now();
    const locks: Locks = new Map();
    let bytes = 0;
    // Counts the positions it takes: as many are taken for it in its transaction.
    const positions = new PositionsFor([], true);
    try {
      const guess =
        expected?.length === keys.length
          ? expected
          : keys.length > 0
            ? await Promise.all(keys.map((key) => this.reads.get(asBuffer(key))))
            : [];
      const { writes } = plan(guess, positions);
      for (const w of writes) {
        if (w.op === 'put') bytes += w.value.byteLength;
        // A guarded key is the transaction's own: the key that guards it is locked.
        if (!(w.op === 'put' && w.guarded)) want(locks, w.key, true);
      }
      for (const key of keys) want(locks, key, false);
    } catch {
      // The values it will see under the locks decide; until then every key it reads is taken exclusive.
      for (const key of keys) want(locks, key, true);
    }
    return new Promise<T>((resolve, reject) =>
      this.writes.add({
        keys,
        plan,
        locks,
        positions: positions.wanted,
        size: locks.size,
        bytes,
        resolve:
          started === undefined
            ? (resolve as (result: unknown) => void)
            : (result) => {
                this.observer?.written((performance.now() - started) / 1000);
                resolve(result as T);
              },
        reject,
      }),
    );
  }

  /**
   * Runs a group of writes as one transaction (write-batch.ts) and settles each: run again as a whole when
   * PostgreSQL asks for it (a deadlock or serialization failure), failed as a whole when it cannot be
   * reached, each member run again alone when the database refused the transaction for another reason
   * (so a write it refuses fails by itself), and a member whose plan wanted a key it did not hold
   * exclusive sent back to the queue with that key exclusive.
   */
  private async commitGroup(group: PendingWrite[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let outcomes: Outcome[];
      try {
        outcomes = await runGroup(this.pool, this.groupSql, this.sequence, group);
      } catch (err) {
        if (isRetryable(err) && attempt < MAX_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, randomInt(Math.min(50, attempt * 2) + 1)));
          continue;
        }
        const cause = unavailable(err);
        if (group.length > 1 && !(cause instanceof StorageUnavailableError)) {
          // What the database refused may be one member's writes: each runs again alone, to fail alone.
          await Promise.all(group.map((member) => this.commitGroup([member])));
          return;
        }
        for (const member of group) member.reject(cause);
        return;
      }
      this.observer?.committed(outcomes.filter((o) => o.kind === 'done').length);
      outcomes.forEach((outcome, i) => {
        const member = group[i]!;
        if (outcome.kind === 'done') member.resolve(outcome.result);
        else if (outcome.kind === 'failed') member.reject(outcome.error);
        else {
          for (const key of outcome.escalate) want(member.locks, key, true);
          const positions = outcome.positions ?? member.positions;
          this.writes.add({ ...member, size: member.locks.size, positions });
        }
      });
      return;
    }
  }

  /** One upsert outside a transaction block: PostgreSQL commits it on its own, durably, all or nothing. */
  async putOwn(entries: readonly StorageEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const started = this.observer && performance.now();
    await this.query(this.sql.upsert, [
      entries.map((e) => asBuffer(e.key)),
      entries.map((e) => asBuffer(e.value)),
    ]);
    if (started === undefined) return;
    this.observer?.written((performance.now() - started) / 1000);
    this.observer?.committed(1);
  }

  observeWrites(observer: WriteObserver): void {
    this.observer = observer;
  }

  gauges(): StorageGauges {
    const lag = this.listener.lagSeconds();
    return {
      pool: {
        max: this.poolSize,
        busy: this.pool.totalCount - this.pool.idleCount,
        idle: this.pool.idleCount,
        waiting: this.pool.waitingCount,
      },
      writesQueued: this.writes.queued,
      ...(lag === undefined ? {} : { notificationLagSeconds: lag }),
    };
  }

  settledPosition(): Promise<number> {
    return this.positions.settledPosition();
  }

  positionsAfter(position: number): Promise<void> {
    return this.positions.positionsAfter(position);
  }

  onChange(listener: ChangeListener): () => void {
    return this.listener.add(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener.close();
    await this.pool.end();
  }
}
