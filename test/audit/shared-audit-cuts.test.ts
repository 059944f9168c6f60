import { expect } from 'chai';
import pg from 'pg';
import { eventually } from '../support/eventually.js';
import type { TestCoffer } from '../support/harness.js';
import { startTestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { killAll, runCoffer, serveSettings, startProcess } from '../support/process.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';

/**
 * Ends every connection of this test's servers, as a database administrator or a failover would: those
 * named `application` (their COFFER_PG_URL says so), so that other test files' servers on the same
 * database, running beside these, are left alone.
 */
async function terminateBackends(application: string): Promise<number> {
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  await client.connect();
  try {
    const { rowCount } = await client.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1`,
      [application],
    );
    return rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** The test database's URL with the application name its connections carry. */
function namedUrl(application: string): string {
  const url = new URL(PG_TEST_URL);
  url.searchParams.set('application_name', application);
  return url.toString();
}

interface Load {
  done: boolean;
  written: number;
}

/** Waits for twenty more acknowledged writes of `load`. */
async function writesGoOn(load: Load): Promise<void> {
  const from = load.written;
  await eventually(() => load.written >= from + 20, { timeout: 20_000, what: 'writes going on' });
}

describe("The audit log's copy in PostgreSQL through connection cuts", function () {
  this.timeout(120_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  let schema: string;
  let a: TestCoffer;
  let b: TestCoffer;
  beforeEach(async () => {
    schema = testSchema();
    // Timed syncs every 5 ms: a store of the copy is nearly always in flight when a batch is written.
    const env = { ...pgEnv(schema, namedUrl(schema)), COFFER_AUDIT_SYNC_MS: '5' };
    a = await startTestCoffer({ env });
    b = await secondServer(a, schema, namedUrl(schema), { COFFER_AUDIT_SYNC_MS: '5' });
  });
  afterEach(async () => {
    // The first server stops even when the second fails to.
    try {
      await b?.close();
    } finally {
      await a?.close();
    }
  });

  /**
   * Writers and readers on both servers while `during` runs (`load.written` counts acknowledged writes);
   * the load ends with it, whether it succeeds or fails.
   */
  async function underLoad(
    servers: readonly TestCoffer[],
    perServer: number,
    during: (load: Load) => Promise<void>,
  ): Promise<void> {
    const load: Load = { done: false, written: 0 };
    const running = Promise.all(
      servers.flatMap((server, s) =>
        Array.from({ length: perServer }, async (_, w) => {
          for (let i = 0; !load.done; i++) {
            // Answers during a cut are 503: the load goes on regardless.
            const put = await server.put(`cuts/s${s}w${w}`, `v${i}`, 'config').catch(() => null);
            if (put?.status === 200 || put?.status === 201) load.written++;
            await server.call('GET', `/v1/kv/cuts/s${s}w${w}`).catch(() => undefined);
          }
        }),
      ),
    );
    try {
      await during(load);
    } finally {
      load.done = true;
      await running;
    }
  }

  async function verifiedOnBoth(): Promise<void> {
    for (const server of [a, b]) {
      const verified = await server.call('GET', '/v1/sys/audit/verify');
      expect(verified.status).to.equal(200);
      expect(verified.body, JSON.stringify(verified.body)).to.include({ intact: true });
    }
  }

  it('verifies intact on both servers after ten cuts of every connection under load', async () => {
    // Each cut lands once the servers have written again since the last one: always under load.
    await underLoad([a, b], 8, async (load) => {
      for (let cut = 0; cut < 10; cut++) {
        await writesGoOn(load);
        expect(await terminateBackends(schema)).to.be.greaterThan(0);
      }
      await writesGoOn(load);
    });
    // Once the database answers again, each server's copy catches up with its files.
    let last: unknown;
    await eventually(
      async () => {
        const both = await Promise.all([a, b].map((s) => s.call('GET', '/v1/sys/audit/verify')));
        last = both.map((v) => v.body);
        return both.every((v) => v.body.intact === true);
      },
      { interval: 100, what: 'both servers verify intact' },
    ).catch(() => expect.fail(`not intact: ${JSON.stringify(last)}`));
    await verifiedOnBoth();
  });

  it('verifies intact offline on either host after writes alternating with restarts of both servers', async () => {
    for (let round = 0; round < 4; round++) {
      await underLoad([a, b], 4, writesGoOn);
      if (round % 2 === 0) a = await a.restart();
      else b = await b.restart();
    }
    await verifiedOnBoth();
    for (const server of [a, b]) {
      const run = await runCoffer(['audit', 'verify'], {
        ...pgEnv(schema),
        COFFER_DATA_DIR: server.config.data_dir,
        COFFER_AUDIT_DIR: server.config.audit.dir!,
        COFFER_MASTER_KEY_FILE: server.config.master_key_file,
        COFFER_LOG_LEVEL: 'silent',
      });
      expect(run.code, run.stdout + run.stderr).to.equal(0);
      expect(run.stdout).to.match(/^intact: /);
    }
  });
});

describe("The audit log's copy in PostgreSQL after a server is killed", function () {
  this.timeout(120_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  it('says the killed chain is open (not that history changed) until its server starts again, which completes its copy and closes it; then both hosts verify', async () => {
    const schema = testSchema();
    const pgSettings = { ...pgEnv(schema), COFFER_AUDIT_CHECKPOINT_EVERY: '100000' };
    const first = serveSettings(1, pgSettings);
    const a = await startProcess(first.env);
    const b = await startTestCoffer({
      rootToken: first.root,
      env: { ...pgSettings, COFFER_MASTER_KEY_FILE: first.env.COFFER_MASTER_KEY_FILE },
    });
    try {
      for (let i = 0; i < 20; i++) {
        const res = await send(a.url, 'PUT', `/v1/kv/killed/k${i}`, first.root, {
          value: `v${i}`,
          type: 'config',
        });
        expect(res.status).to.equal(201);
      }
      await killAll(a);
      const seen = await b.call('GET', '/v1/sys/audit/verify');
      expect(seen.body.intact).to.equal(false);
      expect(seen.body.reason).to.match(/not covered by a checkpoint/);
      expect(seen.body.reason).to.not.match(/deleted, inserted or moved|was altered/);
      const restarted = await startProcess(first.env);
      await restarted.stop();
      const closed = await b.call('GET', '/v1/sys/audit/verify');
      expect(closed.body, JSON.stringify(closed.body)).to.include({ intact: true });
      const offline = await runCoffer(['audit', 'verify'], {
        ...first.env,
        COFFER_LOG_LEVEL: 'silent',
      });
      expect(offline.code, offline.stdout).to.equal(0);
    } finally {
      await b.close();
    }
  });
});
