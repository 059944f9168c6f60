/**
 * The PostgreSQL backend's schema: its numbered migrations, applied when a backend opens, under an
 * advisory lock so several servers starting together is safe; the names derived from its table.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The migrations, in order; a migration is never changed once released, only new ones are added. */
const MIGRATIONS: readonly { readonly version: number; readonly sql: string }[] = [
  {
    version: 1,
    sql: 'CREATE TABLE records (k bytea PRIMARY KEY, v bytea NOT NULL)',
  },
  {
    // The event log's positions (postgres-positions.ts); the store moves it past the positions it holds.
    version: 2,
    sql: 'CREATE SEQUENCE event_positions AS bigint MINVALUE 1',
  },
];

/** Creates the schema and applies the migrations it lacks, one server at a time. */
export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
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

/** The NOTIFY channel of a table: a plain identifier, one per schema. */
export function channelOf(table: string): string {
  return `coffer_${tableTag(table)}`;
}

/** A short tag of a table, naming its prepared statements and its NOTIFY channel. */
export function tableTag(table: string): string {
  return createHash('sha256').update(table).digest('hex').slice(0, 16);
}
