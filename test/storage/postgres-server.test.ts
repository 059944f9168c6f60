import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { pino } from 'pino';
import { prepareStore } from '../../src/app.js';
import { generateToken } from '../../src/auth/token-format.js';
import { loadConfig } from '../../src/config/load.js';
import { sodiumReady } from '../../src/crypto/aead.js';
import { randomBase62 } from '../../src/crypto/random.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { Rewrapper } from '../../src/operator/rewrap.js';
import { openStorage } from '../../src/storage/registry.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { metaKey } from '../../src/store/layout.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { Relay } from '../support/pg-relay.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { killAll, runToExit, startProcess } from '../support/process.js';
import { seedStore } from '../support/seed.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';

describe('Coffer on PostgreSQL (COFFER_STORAGE=postgres)', function () {
  this.timeout(120_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  async function rowsOf(schema: string): Promise<Buffer[]> {
    const client = new pg.Client({ connectionString: PG_TEST_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ k: Buffer; v: Buffer }>(
        `SELECT k, v FROM "${schema}".records`,
      );
      return rows.flatMap((r) => [r.k, r.v]);
    } finally {
      await client.end();
    }
  }

  it('stores everything in the database, where no secret value, token or token name is readable, and keeps it across a restart', async () => {
    const schema = testSchema();
    let c: TestCoffer = await startTestCoffer({ env: pgEnv(schema) });
    try {
      expect((await c.put('payments/prod/db', 'hunter2-secret-value')).status).to.equal(201);
      const reader = await c.token({ role: 'reader', metadata: { name: 'alice-ci-reader' } });
      expect(existsSync(join(c.config.data_dir, 'lmdb'))).to.equal(false);
      // The reader's request is audited with its name; the store's copy of the log is sealed.
      expect((await c.call('GET', '/v1/auth/me', { token: reader })).status).to.equal(200);
      // A read's entry reaches the store within audit.sync_ms.
      const audit = new AuditRecords(c.storage, c.app.keyring.recordSeal);
      await eventually(
        async () =>
          (await audit.storedRuns()).runs.some((r) => r.lines.includes('alice-ci-reader')),
        { what: "the reader's entry in the store" },
      );

      const bytes = Buffer.concat(await rowsOf(schema));
      for (const plain of ['hunter2-secret-value', 'alice-ci-reader', reader, c.rootToken])
        expect(bytes.includes(Buffer.from(plain)), plain.slice(0, 12)).to.equal(false);
      // …and holds the log: the audit lines are in the store, sealed (the name is in the files).
      const rows = await rowsOf(schema);
      const auditRuns = rows.filter((k, i) => i % 2 === 0 && k[0] === 'L'.charCodeAt(0));
      expect(auditRuns.length).to.be.greaterThan(0);

      c = await c.restart();
      const read = await c.call('GET', '/v1/kv/payments/prod/db', { token: reader });
      expect(read.status).to.equal(200);
      expect(read.body.value).to.equal('hunter2-secret-value');
    } finally {
      await c.close();
    }
  });

  it('refuses a read when a database administrator puts back an older copy of a key index (a replay), and a write after it', async () => {
    const schema = testSchema();
    const c = await startTestCoffer({ env: pgEnv(schema) });
    const client = new pg.Client({ connectionString: PG_TEST_URL });
    await client.connect();
    try {
      const index = metaKey('app', 'db');
      expect((await c.put('app/db', 'first')).status).to.equal(201);
      const older = (
        await client.query<{ v: Buffer }>(`SELECT v FROM "${schema}".records WHERE k = $1`, [index])
      ).rows[0]!.v;
      expect((await c.put('app/db', 'second')).status).to.equal(200);
      await client.query(`UPDATE "${schema}".records SET v = $2 WHERE k = $1`, [index, older]);
      const read = await c.call('GET', '/v1/kv/app/db');
      expect(read.status).to.equal(500);
      expect(read.body.code).to.equal('integrity_error');
      expect(read.text).to.not.include('first');
      const write = await c.put('app/db', 'third');
      expect(write.status).to.equal(500);
      expect(write.body.code).to.equal('integrity_error');
    } finally {
      await client.end();
      await c.close();
    }
  });

  it('runs two servers on one database as one: versions 1..100 from 100 PUTs split between them, a revocation and a rotation on one seen by the other', async () => {
    const schema = testSchema();
    const a = await startTestCoffer({ env: pgEnv(schema) });
    const b = await secondServer(a, schema);
    try {
      const puts = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 ? a : b).call('PUT', '/v1/kv/shared/counter', {
            json: { value: `v${i}`, type: 'config' },
          }),
        ),
      );
      expect(puts.every((r) => r.status === 200 || r.status === 201)).to.equal(true);
      expect(puts.map((r) => r.body.version as number).sort((x, y) => x - y)).to.deep.equal(
        Array.from({ length: 100 }, (_, i) => i + 1),
      );
      const versions = await b.call('GET', '/v1/kv/shared/counter/versions');
      expect(versions.body.current_version).to.equal(100);

      const reader = await a.token({ role: 'reader' });
      expect((await b.call('GET', '/v1/kv/shared/counter', { token: reader })).status).to.equal(
        200,
      );
      expect((await a.call('DELETE', `/v1/auth/token/${reader}`)).status).to.equal(204);
      expect((await b.call('GET', '/v1/kv/shared/counter', { token: reader })).status).to.equal(
        401,
      );

      const rotated = await a.call('POST', '/v1/sys/keyring/rotate');
      expect(rotated.status).to.equal(200);
      expect((await b.put('shared/after-rotation', 's')).status).to.equal(201);
      const status = await b.call('GET', '/v1/sys/keyring');
      const active = status.body.versions.find((v: { active: boolean }) => v.active);
      expect(active.version).to.equal(rotated.body.active_version);
      expect(active.secrets).to.equal(1);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('uses a new root token set on one server on the other within seconds, without a restart; the old one stops', async () => {
    const schema = testSchema();
    let a = await startTestCoffer({ env: pgEnv(schema) });
    const b = await secondServer(a, schema);
    const old = a.rootToken;
    try {
      expect((await b.call('GET', '/v1/auth/tokens', { token: old })).status).to.equal(200);
      // A restarts with a new COFFER_ROOT_TOKEN (replacing a leaked one); B keeps running.
      await a.app.close();
      const fresh = generateToken().value;
      a = await startTestCoffer({
        dataDir: a.dataDir,
        rootToken: fresh,
        ownsDir: true,
        env: pgEnv(schema),
      });
      await eventually(
        async () => (await b.call('GET', '/v1/auth/tokens', { token: fresh })).status === 200,
        { interval: 100, what: 'B taking the new root token' },
      );
      expect((await b.call('GET', '/v1/auth/tokens', { token: old })).status).to.equal(401);
      expect((await a.call('GET', '/v1/auth/tokens', { token: old })).status).to.equal(401);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('hands a rewrap whose server was killed to another server, which finishes it from its cursor; nothing is lost', async () => {
    const schema = testSchema();
    const [dirA, dirB] = [tempDir(), tempDir()];
    const root = generateToken().value;
    const keyFile = join(dirA, 'master.key');
    const shared = {
      ...pgEnv(schema),
      COFFER_MASTER_KEY_FILE: keyFile,
      COFFER_ROOT_TOKEN: root,
      COFFER_WORKERS: '1',
    };
    const envA = { ...shared, COFFER_DATA_DIR: join(dirA, 'data') };
    const envB = { ...shared, COFFER_DATA_DIR: join(dirB, 'data') };
    const config = loadConfig({ ...envA, COFFER_LOG_LEVEL: 'silent' });
    await prepareStore(config, { log: pino({ level: 'silent' }) });
    await sodiumReady();
    const storage = await openStorage(config);
    const { holder } = await KeyringHolder.open(
      storage,
      new LocalKeyProvider(loadOrCreateMasterKey(keyFile).key),
      Date.now(),
    );
    const seeded = await seedStore(storage, holder.current(), 3000);
    await storage.close();

    const a = await startProcess(envA);
    const b = await startProcess(envB);
    try {
      expect((await send(a.url, 'POST', '/v1/sys/keyring/rotate', root)).status).to.equal(200);
      expect(
        (await send(a.url, 'POST', '/v1/sys/keyring/rewrap', root, { batch_size: 10 })).status,
      ).to.equal(202);
      let progress = (await send(b.url, 'GET', '/v1/sys/keyring/rewrap', root)).body;
      await eventually(
        async () => {
          progress = (await send(b.url, 'GET', '/v1/sys/keyring/rewrap', root)).body;
          return progress.examined >= progress.total / 4;
        },
        { timeout: 60_000, interval: 10, what: 'a quarter of the rewrap done' },
      );
      // B sees A's run going on.
      expect(progress.running).to.equal(true);
      await killAll(a);

      const resumed = (
        await send(b.url, 'POST', '/v1/sys/keyring/rewrap', root, { batch_size: 500 })
      ).body;
      expect(resumed.examined).to.be.at.least(progress.examined);
      let final = resumed;
      await eventually(
        async () => {
          final = (await send(b.url, 'GET', '/v1/sys/keyring/rewrap', root)).body;
          return final.finished_at !== null && !final.running;
        },
        { timeout: 60_000, interval: 50, what: 'the rewrap finished' },
      );
      expect(final.failed).to.equal(0);
      const status = (await send(b.url, 'GET', '/v1/sys/keyring', root)).body;
      expect(status.versions.find((v: { version: number }) => v.version === 1)).to.include({
        secrets: 0,
        configs: 0,
      });
      expect(status.unreadable).to.equal(0);
      for (let i = 0; i < seeded.length; i += 97) {
        const s = seeded[i]!;
        const read = await send(
          b.url,
          'GET',
          `/v1/kv/${s.namespace}/${s.key}?version=${s.version}`,
          root,
        );
        expect(read.body?.value, `${s.key}@${s.version}`).to.equal(s.value);
      }
    } finally {
      await b.stop();
      // Killed by the test; still running only when an assertion failed before that.
      if (a.child.exitCode === null && a.child.signalCode === null) await killAll(a);
    }
  });

  it('runs one rewrap when two servers start one at the same moment (a lease taken by compare-and-set)', async () => {
    const schema = testSchema();
    const a = await startTestCoffer({ env: pgEnv(schema) });
    const b = await secondServer(a, schema);
    try {
      for (let i = 0; i < 200; i++) await a.put(`lease/k${i}`, `v${i}`);
      await a.call('POST', '/v1/sys/keyring/rotate');
      await b.call('GET', '/v1/sys/keyring'); // b follows the rotation
      // Each server's own rewrapper, started in the same turn: both read "no run" before either claims.
      const started: string[] = [];
      const rewrapperOf = (c: TestCoffer, name: string) =>
        new Rewrapper({
          records: c.app.records.rewrap,
          kv: c.app.records.kv,
          keyring: c.app.keyring,
          now: Date.now,
          log: pino({ level: 'silent' }),
          events: {
            record: async (event) => {
              if (event === 'keyring.rewrap.start') started.push(name);
              return true;
            },
          },
        });
      const [ra, rb] = [rewrapperOf(a, 'a'), rewrapperOf(b, 'b')];
      await Promise.all([ra.start(5, 'test'), rb.start(5, 'test')]);
      let final = await ra.state();
      await eventually(
        async () => {
          final = await ra.state();
          return final!.finishedAt !== null;
        },
        { timeout: 60_000, interval: 50, what: 'the rewrap finished' },
      );
      await Promise.all([ra.stop(), rb.stop()]);
      expect(started).to.have.length(1);
      expect(final!.examined).to.equal(200);
      expect(final!.rewrapped).to.equal(200);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('answers 503 storage_unavailable within the statement timeout while the database is unreachable, and recovers by itself', async () => {
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    const schema = testSchema();
    const c = await startTestCoffer({ env: pgEnv(schema, relay.url()) });
    try {
      expect((await c.put('outage/k', 'before')).status).to.equal(201);
      const port = relay.port;
      await relay.cut();
      const started = Date.now();
      const during = await c.call('PUT', '/v1/kv/outage/k', {
        json: { value: 'x', type: 'secret' },
      });
      expect(during.status).to.equal(503);
      expect(during.body.code).to.equal('storage_unavailable');
      expect(during.headers.get('retry-after')).to.equal('1');
      expect(Date.now() - started).to.be.lessThan(6000);
      // The health probe says the same, within the statement timeout, and says why.
      const probeStarted = Date.now();
      const health = await c.call('GET', '/v1/sys/health', { token: null });
      expect(Date.now() - probeStarted).to.be.lessThan(6000);
      expect(health.status).to.equal(503);
      expect(health.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(health.body).to.include({ code: 'storage_unavailable', status: 503 });
      expect(health.body.health).to.deep.include({
        status: 'unavailable',
        storage: { backend: 'postgres', reachable: false, latency_ms: null },
      });

      await relay.start(port);
      let after = await c.call('GET', '/v1/kv/outage/k');
      await eventually(
        async () => {
          after = await c.call('GET', '/v1/kv/outage/k');
          return after.status === 200;
        },
        { interval: 250, what: 'served again' },
      );
      expect(after.status).to.equal(200);
      expect(after.body.value).to.equal('before');
      expect((await c.put('outage/k', 'after')).status).to.equal(200);
      const healthy = await c.call('GET', '/v1/sys/health', { token: null });
      expect(healthy.status).to.equal(200);
      expect(healthy.body.storage).to.include({ backend: 'postgres', reachable: true });
    } finally {
      await c.close();
      await relay.cut();
    }
  });

  it('answers 503 storage_unavailable, health included, while the database refuses connections (ALLOW_CONNECTIONS false), and recovers', async () => {
    const admin = new pg.Client({ connectionString: PG_TEST_URL });
    await admin.connect();
    const database = `coffer_closed_${randomBase62(8).toLowerCase()}`;
    await admin.query(`CREATE DATABASE ${database}`);
    const url = new URL(PG_TEST_URL);
    url.pathname = `/${database}`;
    const closeDoors = async (allow: boolean) => {
      await admin.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS ${allow}`);
      if (!allow)
        await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1',
          [database],
        );
    };
    let c: TestCoffer | undefined;
    try {
      c = await startTestCoffer({ env: pgEnv('coffer', url.toString()) });
      expect((await c.put('closed/k', 'before')).status).to.equal(201);
      await closeDoors(false);
      for (const [method, path] of [
        ['PUT', '/v1/kv/closed/k'],
        ['GET', '/v1/kv/closed/k'],
        ['GET', '/v1/kv/closed'],
      ] as const) {
        const res = await c.call(method, path, {
          ...(method === 'PUT' ? { json: { value: 'x', type: 'secret' } } : {}),
        });
        expect(res.status, `${method} ${path}`).to.equal(503);
        expect(res.body.code).to.equal('storage_unavailable');
      }
      const health = await c.call('GET', '/v1/sys/health', { token: null });
      expect(health.status).to.equal(503);
      expect(health.body).to.include({ code: 'storage_unavailable' });
      await closeDoors(true);
      await eventually(async () => (await c!.call('GET', '/v1/kv/closed/k')).status === 200, {
        interval: 250,
        what: 'served again',
      });
      expect((await c.call('GET', '/v1/kv/closed/k')).body.value).to.equal('before');
    } finally {
      await c?.close();
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }
  });

  it("answers storage_unavailable, not audit_unavailable, while the database that keeps the audit log's copy is away", async () => {
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    // A checkpoint after every entry: each batch's sync must then store the audit log's copy in the
    // database, so the log itself fails while the database is away — and must not be reported as the cause.
    const c = await startTestCoffer({
      env: { ...pgEnv(testSchema(), relay.url()), COFFER_AUDIT_CHECKPOINT_EVERY: '1' },
    });
    try {
      expect((await c.put('outage/k', 'before')).status).to.equal(201);
      const reader = await c.token({ role: 'reader' });
      const port = relay.port;
      await relay.cut();
      // Every request that needs the database (a token's record is read on each request), for 1.2 s.
      const requests = [
        ['GET', '/v1/kv/outage/k', c.rootToken],
        ['PUT', '/v1/kv/outage/k', c.rootToken],
        ['GET', '/v1/auth/me', reader],
      ] as const;
      for (let round = 0; round < 12; round++) {
        await new Promise((r) => setTimeout(r, 100));
        const [method, path, token] = requests[round % requests.length]!;
        const res = await c.call(method, path, {
          token,
          ...(method === 'PUT' ? { json: { value: 'y', type: 'secret' } } : {}),
        });
        expect(res.status, `${method} ${path}`).to.equal(503);
        expect(res.body.code, `${method} ${path}`).to.equal('storage_unavailable');
      }
      // Back: the log's backlog is stored and requests are served again, without a restart.
      await relay.start(port);
      let after = await c.call('GET', '/v1/kv/outage/k', { token: reader });
      await eventually(
        async () => {
          after = await c.call('GET', '/v1/kv/outage/k', { token: reader });
          return after.status === 200;
        },
        { interval: 250, what: 'served again' },
      );
      expect(after.status).to.equal(200);
      expect(after.body.value).to.equal('before');
    } finally {
      await c.close();
      await relay.cut();
    }
  });

  it('acknowledges only committed writes when the database goes away under a write load from two servers: every acknowledged value reads back byte for byte afterwards', async () => {
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    const port = relay.port;
    const schema = testSchema();
    const a = await startTestCoffer({ env: pgEnv(schema, relay.url()) });
    const b = await secondServer(a, schema, relay.url());
    try {
      const acknowledged = new Map<string, string>();
      let refused = 0;
      const load = Array.from({ length: 300 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 2));
        const value = `value-${i}-${'é'.repeat(i % 7)}-${randomBase62(12)}`;
        const res = await (i % 2 ? a : b).call('PUT', `/v1/kv/load/k${i}`, {
          json: { value, type: i % 3 ? 'secret' : 'config' },
        });
        if (res.status === 201) acknowledged.set(`k${i}`, value);
        else {
          expect(res.status, res.text).to.equal(503);
          refused++;
        }
      });
      // The database goes away a little into the load and comes back a little later.
      await eventually(() => acknowledged.size >= 20, { what: 'writes acknowledged' });
      await relay.cut();
      await eventually(() => refused > 0, { what: 'a write refused' });
      await relay.start(port);
      await Promise.all(load);
      expect(acknowledged.size).to.be.greaterThan(0);
      expect(refused).to.be.greaterThan(0);

      for (const [key, value] of acknowledged) {
        let read = await a.call('GET', `/v1/kv/load/${key}`);
        await eventually(
          async () => {
            read = await a.call('GET', `/v1/kv/load/${key}`);
            return read.status !== 503;
          },
          { interval: 100, what: `${key} readable` },
        );
        expect(read.status, key).to.equal(200);
        expect(read.body.value, key).to.equal(value);
      }
      // Both servers write again without a restart.
      expect((await a.put('load/after-a', 'x')).status).to.equal(201);
      expect((await b.put('load/after-b', 'y')).status).to.equal(201);
    } finally {
      await b.close();
      await a.close();
      await relay.cut();
    }
  });

  it('exits 1 at start-up with one line when the database cannot be reached, never showing the URL or its password', async () => {
    const dir = tempDir();
    const exited = await runToExit({
      COFFER_STORAGE: 'postgres',
      COFFER_PG_URL: 'postgres://coffer:not-this-password@127.0.0.1:1/test',
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'master.key'),
    });
    expect(exited.code).to.equal(1);
    expect(exited.stderr).to.match(/cannot reach PostgreSQL .*check COFFER_PG_URL/);
    expect(exited.stdout + exited.stderr).to.not.include('not-this-password');
  });

  it('refuses to start a second server without the store’s master key: it never makes a key of its own for an existing store', async () => {
    const schema = testSchema();
    const a = await startTestCoffer({ env: pgEnv(schema) });
    const dir = tempDir();
    try {
      let error: unknown;
      await startTestCoffer({ dataDir: dir, rootToken: a.rootToken, env: pgEnv(schema) }).catch(
        (e: unknown) => (error = e),
      );
      expect(String(error)).to.match(/needs its own key/);
      expect(existsSync(join(dir, 'keys', 'master.key'))).to.equal(false);
    } finally {
      await a.close();
    }
  });
});
