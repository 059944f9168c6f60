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
 * The schema is created and upgraded by numbered migrations (MIGRATIONS) when the backend opens, under an
 * advisory lock, so several servers starting together is safe.
 */
import { createHash } from 'node:crypto';
import { userInfo } from 'node:os';
import { Type } from '@sinclair/typebox';
import pg from 'pg';
import {
  type ChangeFeed,
  type KeyRange,
  type Plan,
  type StorageBackend,
  type StorageEntry,
  StorageUnavailableError,
  type StorageWrite,
} from './backend.js';
import { GENERATION_KEY } from './layout.js';
import type { StoragePlugin } from './plugin.js';
import { type ChangeListener, PostgresListener } from './postgres-listener.js';
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
}

/** The migrations, in order; a migration is never changed once released, only new ones are added. */
const MIGRATIONS: readonly { readonly version: number; readonly sql: string }[] = [
  {
    version: 1,
    sql: 'CREATE TABLE records (k bytea PRIMARY KEY, v bytea NOT NULL)',
  },
];

type Put = Extract<StorageWrite, { op: 'put' }>;

/** The locks a transaction takes, by key (latin1): exclusive where it writes the key, shared otherwise. */
type Locks = Map<string, { key: Uint8Array; exclusive: boolean }>;

/** A write waiting for its group's transaction (write-batch.ts). */
interface PendingWrite {
  readonly keys: readonly Uint8Array[];
  readonly plan: (current: readonly (Uint8Array | undefined)[]) => Plan<unknown>;
  readonly locks: Locks;
  readonly size: number;
  readonly bytes: number;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** What became of one plan of a group's transaction. */
type Outcome =
  | { readonly kind: 'done'; readonly result: unknown }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'escalate'; readonly escalate: readonly Uint8Array[] };

function nameOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}

/** Asks for `key`'s lock in `locks`, exclusive when `exclusive` (a lock once exclusive stays so). */
function want(locks: Locks, key: Uint8Array, exclusive: boolean): void {
  const name = nameOf(key);
  locks.set(name, { key, exclusive: exclusive || (locks.get(name)?.exclusive ?? false) });
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Rows per page of a scan. */
const PAGE = 500;
/** PostgreSQL's codes for a transaction to run again: serialization_failure, deadlock_detected. */
const RETRY_CODES = new Set(['40001', '40P01']);
const MAX_ATTEMPTS = 50;

export class PostgresBackend implements StorageBackend, ChangeFeed {
  readonly remote = true;
  private closed = false;
  private readonly reads = new ReadBatcher((batch) => this.readBatch(batch));
  private readonly writes: WriteGroups<PendingWrite>;
  /** The announced keys, as latin1 strings for lookup. */
  private readonly announced: ReadonlySet<string>;
  private readonly channel: string;

  /** Mixed into every lock id, so that two schemas in one database never share locks. */
  private readonly lockSalt: Buffer;
  /** Named (prepared) statements: parsed and planned once per connection, not per query. */
  private readonly sql: Record<
    'batch' | 'scanFirst' | 'scanNext' | 'upsert' | 'segments',
    { name: string; text: string }
  >;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly table: string,
    announce: readonly Uint8Array[],
    private readonly listener: PostgresListener,
    poolSize: number,
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
    this.announced = new Set(announce.map(nameOf));
    // Named per table: two schemas on one connection's server never share a statement.
    const tag = tableTag(table);
    this.channel = channelOf(table);
    this.lockSalt = Buffer.from(`coffer-lock:${table}\u0000`);
    const named = (name: string, text: string) => ({ name: `coffer-${name}-${tag}`, text });
    this.sql = {
      // One statement, so every part reads the same snapshot: the keys, then each range's last entry.
      batch: named(
        'batch',
        `SELECT 0 AS w, 0 AS i, k, v FROM ${table} WHERE k = ANY($1::bytea[])
         UNION ALL
         SELECT 1 AS w, r.i::int AS i, l.k, l.v
           FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS r(lo, hi, i)
           CROSS JOIN LATERAL (SELECT k, v FROM ${table} WHERE k >= r.lo AND k < r.hi ORDER BY k DESC LIMIT 1) l`,
      ),
      scanFirst: named(
        'scan-first',
        `SELECT k, v FROM ${table} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3`,
      ),
      scanNext: named(
        'scan-next',
        `SELECT k, v FROM ${table} WHERE k > $1 AND k < $2 ORDER BY k LIMIT $3`,
      ),
      // A key's segment after the prefix ($3): up to its first 0x00 or 0x01 byte.
      segments: named(
        'segments',
        `WITH RECURSIVE seg(s) AS (
           (SELECT ${segmentOf('k')} FROM ${table} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT 1)
           UNION ALL
           SELECT (SELECT ${segmentOf('r.k')} FROM ${table} r
                   WHERE r.k >= $3::bytea || seg.s || '\\x02'::bytea AND r.k < $2 ORDER BY r.k LIMIT 1)
           FROM seg WHERE seg.s IS NOT NULL)
         SELECT s FROM seg WHERE s IS NOT NULL LIMIT $4`,
      ),
      upsert: named(
        'upsert',
        `INSERT INTO ${table} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`,
      ),
    };
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
    const listener = new PostgresListener(connection, channelOf(table));
    return new PostgresBackend(pool, table, options.announce ?? [], listener, options.poolSize);
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

  async *scan(range: KeyRange): AsyncIterable<StorageEntry> {
    let left = range.limit ?? Number.POSITIVE_INFINITY;
    let after: Buffer | null = null;
    while (left > 0) {
      const size = Math.min(PAGE, left);
      const page: pg.QueryResult<{ k: Buffer; v: Buffer }> =
        after === null
          ? await this.query(this.sql.scanFirst, [asBuffer(range.start), asBuffer(range.end), size])
          : await this.query(this.sql.scanNext, [after, asBuffer(range.end), size]);
      const rows = page.rows;
      for (const row of rows) yield { key: row.k, value: row.v };
      if (rows.length < size) return;
      left -= rows.length;
      after = rows[rows.length - 1]!.k;
    }
  }

  /** Pages of the whole table inside one REPEATABLE READ, READ ONLY transaction: one snapshot. */
  async *everything(): AsyncIterable<StorageEntry> {
    const { client, release } = await this.checkout();
    let broken = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      let after: Buffer | null = null;
      for (;;) {
        const page: pg.QueryResult<{ k: Buffer; v: Buffer }> =
          after === null
            ? await client.query(`SELECT k, v FROM ${this.table} ORDER BY k LIMIT ${PAGE}`)
            : await client.query(
                `SELECT k, v FROM ${this.table} WHERE k > $1 ORDER BY k LIMIT ${PAGE}`,
                [after],
              );
        for (const row of page.rows) yield { key: row.k, value: row.v };
        if (page.rows.length < PAGE) break;
        after = page.rows[page.rows.length - 1]!.k;
      }
    } catch (err) {
      throw unavailable(err);
    } finally {
      await client.query('COMMIT').catch(() => {
        broken = true;
      });
      release(broken);
    }
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
    plan: (current: readonly (Uint8Array | undefined)[]) => Plan<T>,
    expected?: readonly (Uint8Array | undefined)[],
  ): Promise<T> {
    const locks: Locks = new Map();
    let bytes = 0;
    try {
      const guess =
        expected?.length === keys.length
          ? expected
          : keys.length > 0
            ? await Promise.all(keys.map((key) => this.reads.get(asBuffer(key))))
            : [];
      const { writes } = plan(guess);
      for (const w of writes) {
        want(locks, w.key, true);
        if (w.op === 'put') bytes += w.value.byteLength;
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
        size: locks.size,
        bytes,
        resolve: resolve as (result: unknown) => void,
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
        outcomes = await this.once(group);
      } catch (err) {
        if (isRetryable(err) && attempt < MAX_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 2)));
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
      outcomes.forEach((outcome, i) => {
        const member = group[i]!;
        if (outcome.kind === 'done') member.resolve(outcome.result);
        else if (outcome.kind === 'failed') member.reject(outcome.error);
        else {
          for (const key of outcome.escalate) want(member.locks, key, true);
          this.writes.add({ ...member, size: member.locks.size });
        }
      });
      return;
    }
  }

  /** One upsert outside a transaction block: PostgreSQL commits it on its own, durably, all or nothing. */
  async putOwn(entries: readonly StorageEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.query(this.sql.upsert, [
      entries.map((e) => asBuffer(e.key)),
      entries.map((e) => asBuffer(e.value)),
    ]);
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

  /**
   * A pooled connection for a transaction. A connection lost while checked out is reported as an 'error'
   * event (and as the failing query's error): without a listener the event would end the process. Released
   * as broken (closed, not reused) when it was lost or `broken` says so.
   */
  private async checkout(): Promise<{
    client: pg.PoolClient;
    release: (broken: boolean) => void;
  }> {
    const client = await this.pool.connect().catch((err: unknown) => {
      throw unavailable(err);
    });
    let lost = false;
    const onError = (): void => {
      lost = true;
    };
    client.on('error', onError);
    return {
      client,
      release: (broken) => {
        client.off('error', onError);
        client.release(broken || lost);
      },
    };
  }

  /**
   * One transaction for a group of plans: the locks of them all, taken at once; their keys read; each plan
   * run in turn on what the plans before it have written (as if they had committed one after another);
   * the writes of those that did not throw, and COMMIT. A plan that throws writes nothing, and its error is
   * its outcome once the others have committed (what it saw is then the store's state).
   */
  private async once(group: readonly PendingWrite[]): Promise<Outcome[]> {
    const keys = new Map<string, Uint8Array>();
    const locks: Locks = new Map();
    for (const member of group) {
      for (const key of member.keys) keys.set(nameOf(key), key);
      for (const lock of member.locks.values()) want(locks, lock.key, lock.exclusive);
    }
    const { client, release } = await this.checkout();
    let broken = false;
    try {
      // One round trip: BEGIN, the locks and the read, as one simple query of several statements.
      const opening = ['BEGIN'];
      if (locks.size > 0) opening.push(this.lockStatement([...locks.values()]));
      if (keys.size > 0)
        opening.push(
          `SELECT k, v FROM ${this.table} WHERE k = ANY(${byteaArray([...keys.values()])})`,
        );
      const opened = await client.query<{ k: Buffer; v: Buffer }>(opening.join(';\n'));
      const state = new Map<string, Uint8Array | undefined>();
      if (keys.size > 0)
        for (const row of [opened].flat().at(-1)!.rows) state.set(row.k.toString('latin1'), row.v);
      const held = new Set([...locks].filter(([, l]) => l.exclusive).map(([name]) => name));
      const writes: StorageWrite[] = [];
      const outcomes = group.map((member): Outcome => {
        let decided: Plan<unknown>;
        try {
          decided = member.plan(member.keys.map((key) => state.get(nameOf(key))));
        } catch (error) {
          return { kind: 'failed', error };
        }
        const escalate = decided.writes.filter((w) => !held.has(nameOf(w.key))).map((w) => w.key);
        if (escalate.length > 0) return { kind: 'escalate', escalate };
        for (const w of decided.writes)
          state.set(nameOf(w.key), w.op === 'put' ? w.value : undefined);
        writes.push(...decided.writes);
        return { kind: 'done', result: decided.result };
      });
      // One round trip: the writes, the announcements and COMMIT.
      await client.query([...this.writeStatements(writes), 'COMMIT'].join(';\n'));
      return outcomes;
    } catch (err) {
      // A ROLLBACK that fails means the connection is gone: it is not given back to the pool.
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      release(broken);
    }
  }

  /**
   * The statements of a plan's writes, in order (the last write to a key decides what it holds), and a
   * NOTIFY for each announced key they touch: PostgreSQL delivers it when (and if) the transaction commits.
   */
  private writeStatements(writes: readonly StorageWrite[]): string[] {
    const final = new Map<string, StorageWrite>();
    for (const write of writes) final.set(nameOf(write.key), write);
    const puts = [...final.values()].filter((w): w is Put => w.op === 'put');
    const deletes = [...final.values()].filter((w) => w.op === 'delete');
    const statements: string[] = [];
    if (deletes.length > 0)
      statements.push(
        `DELETE FROM ${this.table} WHERE k = ANY(${byteaArray(deletes.map((w) => w.key))})`,
      );
    if (puts.length > 0)
      statements.push(
        `INSERT INTO ${this.table} (k, v) VALUES ${puts
          .map((w) => `(${bytea(w.key)}, ${bytea(w.value)})`)
          .join(', ')} ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`,
      );
    for (const name of final.keys())
      if (this.announced.has(name))
        statements.push(
          `SELECT pg_notify('${this.channel}', '${Buffer.from(name, 'latin1').toString('hex')}')`,
        );
    return statements;
  }

  /**
   * The statement that takes the transaction's key locks, in ascending lock-id order (so transactions never
   * wait for a lower id while holding a higher, and never deadlock); an id both modes ask for is exclusive.
   */
  private lockStatement(locks: readonly { key: Uint8Array; exclusive: boolean }[]): string {
    const modes = new Map<bigint, boolean>();
    for (const { key, exclusive } of locks) {
      const id = this.lockId(key);
      modes.set(id, (modes.get(id) ?? false) || exclusive);
    }
    const ordered = [...modes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `SELECT count(CASE WHEN x THEN pg_advisory_xact_lock(id) ELSE pg_advisory_xact_lock_shared(id) END)
      FROM unnest(ARRAY[${ordered.map(([id]) => id.toString()).join(',')}]::bigint[],
                  ARRAY[${ordered.map(([, x]) => String(x)).join(',')}]::boolean[]) AS l(id, x)`;
  }

  /** A 64-bit advisory lock id for `key` in this table. */
  private lockId(key: Uint8Array): bigint {
    return createHash('sha256').update(this.lockSalt).update(key).digest().readBigInt64BE(0);
  }
}

/** Creates the schema and applies the migrations it lacks, one server at a time. */
async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  // A connection lost while checked out is also an 'error' event, which must not end the process: the
  // failing query reports it.
  const ignore = (): void => undefined;
  client.on('error', ignore);
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`coffer:${schema}`]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS "${schema}".migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM "${schema}".migrations`,
      );
      const applied = new Set(rows.map((r) => r.version));
      const newest = Math.max(0, ...applied);
      const known = MIGRATIONS[MIGRATIONS.length - 1]!.version;
      if (newest > known)
        throw new Error(
          `the PostgreSQL schema "${schema}" is at migration ${newest}, newer than this release knows (${known}): run a newer Coffer`,
        );
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(`SET LOCAL search_path TO "${schema}"`);
          await client.query(migration.sql);
          await client.query(`INSERT INTO "${schema}".migrations (version) VALUES ($1)`, [
            migration.version,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [
        `coffer:${schema}`,
      ]);
    }
  } finally {
    client.off('error', ignore);
    client.release();
  }
}

/**
 * SQLSTATE classes and codes of an unreachable or overloaded server: connection exceptions (08), the server
 * shutting down or starting (57P01-57P03), a statement cancelled by the timeout (57014), too many
 * connections (53300).
 */
const UNAVAILABLE_CODE = /^(08...|57P0[1-3]|57014|53300)$/;
/** node-postgres's own messages for a connection that could not be made or was lost. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended/;

/** `err` as StorageUnavailableError when it says the server cannot be reached; otherwise `err` itself. */
function unavailable(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof StorageUnavailableError) return err;
  const code = (err as { code?: unknown }).code;
  const network = typeof code === 'string' && /^E[A-Z]+$/.test(code); // ECONNREFUSED, ECONNRESET, …
  if (
    network ||
    (typeof code === 'string' && UNAVAILABLE_CODE.test(code)) ||
    UNAVAILABLE_MESSAGE.test(err.message)
  )
    return new StorageUnavailableError(typeof code === 'string' ? code : err.message.slice(0, 80));
  return err;
}

/** SQL for the segment of `key` after the prefix $3: its bytes up to the first 0x00 or 0x01. */
function segmentOf(key: string): string {
  const rest = `substring(${key} from length($3::bytea) + 1)`;
  const cut = `least(nullif(position('\\x00'::bytea in ${rest}), 0), nullif(position('\\x01'::bytea in ${rest}), 0))`;
  return `CASE WHEN ${cut} IS NULL THEN ${rest} ELSE substring(${rest} from 1 for ${cut} - 1) END`;
}

/** The NOTIFY channel of a table: a plain identifier, one per schema. */
function channelOf(table: string): string {
  return `coffer_${tableTag(table)}`;
}

/** A short tag of a table, naming its prepared statements and its NOTIFY channel. */
function tableTag(table: string): string {
  return createHash('sha256').update(table).digest('hex').slice(0, 16);
}

function isRetryable(err: unknown): boolean {
  return RETRY_CODES.has((err as { code?: unknown }).code as string);
}

/**
 * Bytes as an SQL expression, for statements sent with their values in the text (several statements in one
 * round trip take no parameters): decode of a hex string, which holds nothing but [0-9a-f].
 */
function bytea(bytes: Uint8Array): string {
  return `decode('${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}', 'hex')`;
}

function byteaArray(keys: readonly Uint8Array[]): string {
  return `ARRAY[${keys.map(bytea).join(', ')}]::bytea[]`;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The settings a PostgreSQL store is opened with (storage/plugin.ts). */
interface PostgresSettings {
  readonly postgres: {
    readonly schema: string;
    readonly pool_size: number;
    readonly statement_timeout_ms: number;
  };
  readonly pg_url?: string;
}

/** One database shared by several servers (docs/deployment.md). */
export const postgresStorage = {
  name: 'postgres',
  settings: {
    postgres: Type.Object(
      {
        schema: Type.String({
          pattern: '^[a-z_][a-z0-9_]{0,62}$',
          default: 'coffer',
          env: 'COFFER_PG_SCHEMA',
          description:
            "for `postgres`: the schema holding Coffer's tables (created and upgraded at start-up)",
        }),
        pool_size: Type.Integer({
          minimum: 1,
          maximum: 1000,
          default: 10,
          env: 'COFFER_PG_POOL_SIZE',
          description: 'for `postgres`: connections per server process',
        }),
        statement_timeout_ms: Type.Integer({
          minimum: 100,
          maximum: 600_000,
          default: 5000,
          env: 'COFFER_PG_STATEMENT_TIMEOUT_MS',
          description:
            'for `postgres`: how long a statement may run before the request answers 503 `storage_unavailable`',
        }),
      },
      { additionalProperties: false },
    ),
    pg_url: Type.Optional(
      Type.String({
        minLength: 1,
        env: 'COFFER_PG_URL',
        envOnly:
          'the PostgreSQL URL (it may hold a password) may only come from COFFER_PG_URL, or the PG* variables and a .pgpass file',
        description:
          'for `postgres`: `postgres://user@host:5432/db`; only from the environment (it may hold a password). Unset: the standard `PG*` variables and `~/.pgpass` (owner-only) apply',
      }),
    ),
  },
  open: (given) => {
    const settings = given as unknown as PostgresSettings;
    return PostgresBackend.open({
      ...(settings.pg_url === undefined ? {} : { connectionString: settings.pg_url }),
      schema: settings.postgres.schema,
      poolSize: settings.postgres.pool_size,
      statementTimeoutMs: settings.postgres.statement_timeout_ms,
      // Every keyring change (rotation, revocation, a new root token, migration) writes the generation.
      announce: [GENERATION_KEY],
    });
  },
  mayExist: () => true,
} satisfies StoragePlugin<'postgres'>;
