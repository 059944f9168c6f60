/**
 * The PostgreSQL server the PostgreSQL tests use: COFFER_TEST_PG_URL, by default postgres://127.0.0.1:5432/test.
 * When it does not answer and this is the default local server, the set-up makes it answer as a fresh
 * Debian machine allows (as root): installs Debian's `postgresql` when missing, starts its cluster, and
 * gives the current user a role and the `test` database with local trust, saying so in one line. When it
 * still cannot connect, the tests are pending with the reason (or fail under
 * COFFER_TEST_REQUIRE_SYSTEM_PACKAGES=1, as `.ci/run` sets). Each test run works in schemas of its own,
 * dropped at the end.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import pg from 'pg';
import { randomBase62 } from '../../src/crypto/random.js';

export const PG_TEST_URL =
  process.env.COFFER_TEST_PG_URL ??
  `postgres://${encodeURIComponent(userInfo().username)}@127.0.0.1:5432/test`;
const IS_DEFAULT = process.env.COFFER_TEST_PG_URL === undefined;

async function answers(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (err) {
    return (err as Error).message.split('\n')[0];
  } finally {
    await client.end().catch(() => undefined);
  }
}

function run(command: string, args: string[]): void {
  execFileSync(command, args, {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 600_000,
  });
}

const asPostgres = (sql: string): void =>
  run('runuser', ['-u', 'postgres', '--', 'psql', '-q', '-c', sql]);

/** Installs, starts and opens up the local cluster; throws with what failed. */
function setUpLocalServer(): void {
  const hasServer = () =>
    existsSync('/usr/lib/postgresql') &&
    spawnSync('sh', ['-c', 'command -v pg_ctlcluster']).status === 0;
  if (!hasServer()) {
    console.log('  installing postgresql (Debian package) for the PostgreSQL tests…');
    try {
      run('apt-get', ['install', '-y', '-q', 'postgresql']);
    } catch {
      run('apt-get', ['update', '-q']);
      run('apt-get', ['install', '-y', '-q', 'postgresql']);
    }
  }
  const version = readdirSync('/etc/postgresql').sort().at(-1);
  if (version === undefined) throw new Error('no PostgreSQL cluster in /etc/postgresql');
  console.log(`  starting the PostgreSQL ${version} cluster for the PostgreSQL tests…`);
  spawnSync('pg_ctlcluster', [version, 'main', 'start'], { stdio: 'ignore' });
  // Local connections from this machine only, without a password, for the test role and database.
  const hba = `/etc/postgresql/${version}/main/pg_hba.conf`;
  const trust = 'host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n';
  if (!readFileSync(hba, 'utf8').startsWith(trust)) {
    writeFileSync(hba, trust + readFileSync(hba, 'utf8'));
    run('pg_ctlcluster', [version, 'main', 'reload']);
  }
  const user = userInfo().username.replace(/[^a-z0-9_]/g, '');
  try {
    asPostgres(`CREATE ROLE "${user}" SUPERUSER LOGIN`);
  } catch {
    // it exists
  }
  try {
    asPostgres(`CREATE DATABASE test OWNER "${user}"`);
  } catch {
    // it exists
  }
}

let ready: Promise<string | undefined> | undefined;

/** Why the PostgreSQL tests cannot run here, or undefined when they can. */
function unavailable(): Promise<string | undefined> {
  ready ??= (async () => {
    const first = await answers(PG_TEST_URL);
    if (first === undefined) return undefined;
    if (!IS_DEFAULT) return `COFFER_TEST_PG_URL does not answer (${first})`;
    if (process.getuid?.() !== 0)
      return `PostgreSQL at ${PG_TEST_URL} does not answer (${first}) and this user cannot set one up (needs root)`;
    try {
      setUpLocalServer();
    } catch (err) {
      return `PostgreSQL could not be set up (${(err as Error).message.split('\n')[0]})`;
    }
    const again = await answers(PG_TEST_URL);
    return again === undefined
      ? undefined
      : `PostgreSQL at ${PG_TEST_URL} does not answer (${again})`;
  })();
  return ready;
}

/**
 * Call from a `before` hook (`async function () {…}`): marks the suite pending with the reason when no
 * PostgreSQL server can be had, or fails it when CI requires one.
 */
export async function requirePostgres(context: Mocha.Context): Promise<void> {
  const reason = await unavailable();
  if (reason === undefined) return;
  if (process.env.COFFER_TEST_REQUIRE_SYSTEM_PACKAGES === '1')
    throw new Error(`${reason}; COFFER_TEST_REQUIRE_SYSTEM_PACKAGES=1 requires it`);
  const suite = context.test?.parent;
  if (suite) suite.title += ` [pending: ${reason}]`;
  context.skip();
}

const made: string[] = [];

/** A schema name no other run uses; dropped by dropTestSchemas. */
export function testSchema(): string {
  const name = `coffer_test_${randomBase62(10).toLowerCase()}`;
  made.push(name);
  return name;
}

export async function dropTestSchemas(): Promise<void> {
  if (made.length === 0) return;
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  try {
    await client.connect();
    for (const name of made.splice(0))
      await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
