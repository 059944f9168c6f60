/**
 * What one PostgreSQL query costs the client process in CPU: a prepared single-row SELECT through a
 * node-postgres pool, 32 at a time for `--seconds`, this process pinned to core 0 where the machine
 * allows; prints queries a second and user + system µs per query. The floor under every query the
 * PostgreSQL backend sends (docs/performance.md).
 *
 *   npm run build && node dist/bench/pg-query-cost.js [--seconds 5]
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { describeMachine, pinning } from './machine.js';
import { benchPgUrl, benchSchema, dropBenchSchemas } from './storage.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '5' } } });
const seconds = Number(args.seconds);
if (pinning) execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const url = benchPgUrl();
const schema = benchSchema();
const pool = new pg.Pool({ connectionString: url, max: 10 });
try {
  await pool.query(`CREATE SCHEMA "${schema}"`);
  await pool.query(`CREATE TABLE "${schema}".kv (k bytea PRIMARY KEY, v bytea NOT NULL)`);
  await pool.query(`INSERT INTO "${schema}".kv VALUES ('\\x01', decode(repeat('ab', 300), 'hex'))`);
  const query = {
    name: `cost-${schema}`,
    text: `SELECT v FROM "${schema}".kv WHERE k = $1`,
    values: [Buffer.from([1])],
  };
  for (let i = 0; i < 2000; i++) await pool.query(query);
  const cpu = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  let queries = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        await pool.query(query);
        queries++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  console.log(
    `node-postgres, one prepared SELECT, 32 at a time — ${describeMachine()}: ${(queries / seconds).toFixed(0)} queries/s, ${((used.user + used.system) / queries).toFixed(1)} µs CPU each (user ${(used.user / queries).toFixed(1)}, system ${(used.system / queries).toFixed(1)})`,
  );
} finally {
  await pool.end();
  await dropBenchSchemas(url, [schema]);
}
