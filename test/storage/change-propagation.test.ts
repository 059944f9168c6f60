import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { Relay } from '../support/pg-relay.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { pgEnv } from '../support/shared-servers.js';

describe('Changes reach the other servers at once (PostgreSQL LISTEN/NOTIFY)', function () {
  this.timeout(60_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  /**
   * B checks the keyring generation only once an hour here: whatever reaches it sooner came through the
   * notification, or through the reading again that follows a lost connection.
   */
  const serverB = (a: TestCoffer, schema: string, url = PG_TEST_URL): Promise<TestCoffer> =>
    startTestCoffer({
      rootToken: a.rootToken,
      env: { ...pgEnv(schema, url), COFFER_MASTER_KEY_FILE: a.config.master_key_file },
      start: { followEveryMs: 3_600_000 },
    });

  it('a rotation on one server is the active version on another within a fraction of a second', async () => {
    const schema = testSchema();
    const a = await startTestCoffer({ env: pgEnv(schema) });
    const b = await serverB(a, schema);
    try {
      const rotated = await a.call('POST', '/v1/sys/keyring/rotate');
      expect(rotated.status).to.equal(200);
      const target = rotated.body.active_version as number;
      const took = await eventually(() => b.app.keyring.current().activeVersion === target, {
        timeout: 2000,
        interval: 10,
        what: 'B following the rotation',
      });
      expect(took).to.be.lessThan(1000);
    } finally {
      await b.close();
      await a.close();
    }
  });

  /**
   * Servers A and B on one schema, B's connections through a relay that `cut` breaks (and `reconnect` lets
   * through again); all three stopped after `test`.
   */
  async function withRelayedB(
    test: (servers: {
      a: TestCoffer;
      b: TestCoffer;
      cut: () => Promise<void>;
      reconnect: () => Promise<void>;
    }) => Promise<void>,
  ): Promise<void> {
    const schema = testSchema();
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    const port = relay.port;
    const a = await startTestCoffer({ env: pgEnv(schema) });
    const b = await serverB(a, schema, relay.url());
    try {
      await test({ a, b, cut: () => relay.cut(), reconnect: () => relay.start(port) });
    } finally {
      await b.close();
      await a.close();
      await relay.cut();
    }
  }

  it('a change made while a server had lost its connection reaches it once the connection is back', () =>
    withRelayedB(async ({ a, b, cut, reconnect }) => {
      const before = b.app.keyring.current().activeVersion;
      await cut();
      const rotated = await a.call('POST', '/v1/sys/keyring/rotate');
      expect(rotated.status).to.equal(200);
      await new Promise((r) => setTimeout(r, 300));
      expect(b.app.keyring.current().activeVersion).to.equal(before);
      await reconnect();
      await eventually(
        () => b.app.keyring.current().activeVersion === rotated.body.active_version,
        { interval: 10, what: 'B reading the keyring again after reconnecting' },
      );
    }));

  it("the metrics' notification lag grows while the listening connection is lost, and falls once it is back", () =>
    withRelayedB(async ({ b, cut, reconnect }) => {
      const lag = async (): Promise<number | undefined> => {
        const text = (await b.call('GET', '/v1/sys/metrics')).text;
        const line = text
          .split('\n')
          .find((l) => l.startsWith('coffer_pg_notification_lag_seconds '));
        return line === undefined ? undefined : Number(line.split(' ')[1]);
      };
      await eventually(async () => ((await lag()) ?? 1) < 0.5, { what: 'a first probe heard' });
      await cut();
      await eventually(async () => ((await lag()) ?? 0) >= 1.2, {
        what: 'the lag growing while the connection is lost',
      });
      await reconnect();
      await eventually(async () => (await lag())! < 0.5, {
        what: 'the lag falling after reconnecting',
      });
    }));
});
