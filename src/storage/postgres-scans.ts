/**
 * The PostgreSQL backend's reads of many rows (postgres-backend.ts): a range, page by page, and the whole
 * table from one snapshot.
 */
import type pg from 'pg';
import type { KeyRange, StorageEntry } from './backend.js';
import { unavailable } from './postgres-errors.js';
import { checkout } from './postgres-group.js';
import type { PreparedStatements } from './postgres-statements.js';

type Query = <R extends pg.QueryResultRow>(
  statement: { name: string; text: string },
  values: unknown[],
) => Promise<pg.QueryResult<R>>;

/** The entries of `range`, `page` rows per query, each page after the last key of the one before. */
export async function* scanPages(
  range: KeyRange,
  page: number,
  query: Query,
  sql: PreparedStatements,
): AsyncIterable<StorageEntry> {
  let left = range.limit ?? Number.POSITIVE_INFINITY;
  let after: Buffer | null = null;
  while (left > 0) {
    const size = Math.min(page, left);
    const result: pg.QueryResult<{ k: Buffer; v: Buffer }> =
      after === null
        ? await query(sql.scanFirst, [asBuffer(range.start), asBuffer(range.end), size])
        : await query(sql.scanNext, [after, asBuffer(range.end), size]);
    const rows = result.rows;
    for (const row of rows) yield { key: row.k, value: row.v };
    if (rows.length < size) return;
    left -= rows.length;
    after = rows[rows.length - 1]!.k;
  }
}

/** Every row of `table` in key order, `page` at a time, inside one REPEATABLE READ, READ ONLY transaction. */
export async function* everythingOnce(
  pool: pg.Pool,
  table: string,
  page: number,
): AsyncIterable<StorageEntry> {
  const { client, release } = await checkout(pool);
  let broken = false;
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    let after: Buffer | null = null;
    for (;;) {
      const result: pg.QueryResult<{ k: Buffer; v: Buffer }> =
        after === null
          ? await client.query(`SELECT k, v FROM ${table} ORDER BY k LIMIT ${page}`)
          : await client.query(`SELECT k, v FROM ${table} WHERE k > $1 ORDER BY k LIMIT ${page}`, [
              after,
            ]);
      const rows = result.rows;
      for (const row of rows) yield { key: row.k, value: row.v };
      if (rows.length < page) break;
      after = rows[rows.length - 1]!.k;
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

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
