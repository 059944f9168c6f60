/**
 * The PostgreSQL backend's named (prepared) statements: parsed and planned once per connection, not per
 * query; named per table, so two schemas on one server never share a statement.
 */
import { tableTag } from './postgres-schema.js';

export type PreparedStatements = Record<
  'batch' | 'scanFirst' | 'scanNext' | 'upsert' | 'segments',
  { name: string; text: string }
>;

/** The statements on `table` (a quoted, schema-qualified name). */
export function preparedStatements(table: string): PreparedStatements {
  const tag = tableTag(table);
  const named = (name: string, text: string) => ({ name: `coffer-${name}-${tag}`, text });
  return {
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

/** SQL for the segment of `key` after the prefix $3: its bytes up to the first 0x00 or 0x01. */
function segmentOf(key: string): string {
  const rest = `substring(${key} from length($3::bytea) + 1)`;
  const cut = `least(nullif(position('\\x00'::bytea in ${rest}), 0), nullif(position('\\x01'::bytea in ${rest}), 0))`;
  return `CASE WHEN ${cut} IS NULL THEN ${rest} ELSE substring(${rest} from 1 for ${cut} - 1) END`;
}
