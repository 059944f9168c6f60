import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { Relay } from '../support/pg-relay.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { killAll, serveSettings, startProcess } from '../support/process.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';
import { steadyWriter } from '../support/steady-writer.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/** The versions of `key` the receiver took, each message once (a repeat carries its first webhook-id), signatures checked. */
function versionsOf(receiver: WebhookReceiver, secret: string, key: string): number[] {
  const wh = new Webhook(secret);
  const seen = new Set<string>();
  const out: number[] = [];
  for (const r of receiver.received) {
    const message = wh.verify(r.body, r.headers as Record<string, string>) as {
      data: { key: string; version: number };
    };
    const id = String(r.headers['webhook-id']);
    if (seen.has(id) || message.data.key !== key) continue;
    seen.add(id);
    out.push(message.data.version);
  }
  return out;
}

const ALLOW = { COFFER_WEBHOOKS_ALLOW_PRIVATE: 'true' };
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('webhooks across servers and failures', function () {
  this.timeout(120_000);
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await startWebhookReceiver();
  });
  afterEach(() => {
    receiver.received.length = 0;
  });
  after(async () => {
    await receiver?.close();
  });

  it('kill -9 of the server (two workers) while it is written: once restarted, every acknowledged change reaches the receiver, in order', async () => {
    const { env, root } = serveSettings(2, ALLOW);
    let p = await startProcess(env);
    try {
      const made = await send(p.url, 'PUT', '/v1/sys/webhooks/killed', root, {
        url: receiver.url,
        namespaces: ['killed'],
      });
      expect(made.status).to.equal(201);
      const secret = String(made.body.secret);
      const writer = steadyWriter(p.url, root, '/v1/kv/killed/k');
      await eventually(() => versionsOf(receiver, secret, 'k').length >= 20, { timeout: 20_000 });
      await killAll(p);
      await writer.stop();
      p = await startProcess(env);
      const latest = (await send(p.url, 'GET', '/v1/kv/killed/k', root)).body.version as number;
      expect(latest).to.be.at.least(writer.acknowledged());
      // The lease of the killed process runs out (10 s); then the new one goes on from the cursor.
      await eventually(() => versionsOf(receiver, secret, 'k').length >= latest, {
        timeout: 30_000,
      });
      expect(versionsOf(receiver, secret, 'k')).to.deep.equal(upTo(latest));
    } finally {
      await killAll(p).catch(() => undefined);
    }
  });

  describe('two servers on one PostgreSQL store', () => {
    let a: TestCoffer | undefined;
    let b: TestCoffer | undefined;
    before(async function () {
      await requirePostgres(this);
      const schema = testSchema();
      a = await startTestCoffer({ env: { ...pgEnv(schema), ...ALLOW } });
      b = await secondServer(a, schema, PG_TEST_URL, ALLOW);
    });
    after(async () => {
      await b?.close();
      await a?.close();
      await dropTestSchemas();
    });

    it('one server delivers at a time; when it stops, the other goes on from where it got, missing nothing', async () => {
      if (!a || !b) throw new Error('the servers did not start');
      const made = await a.call('PUT', '/v1/sys/webhooks/shared', {
        json: { url: receiver.url, namespaces: ['shared'] },
      });
      expect(made.status, JSON.stringify(made.body)).to.equal(201);
      const secret = String(made.body.secret);
      for (let v = 1; v <= 5; v++) await (v % 2 ? a : b).put('shared/k', `v${v}`);
      await eventually(() => versionsOf(receiver, secret, 'k').length >= 5, { timeout: 15_000 });
      await a.close();
      a = undefined;
      for (let v = 6; v <= 10; v++) await b.put('shared/k', `v${v}`);
      await eventually(() => versionsOf(receiver, secret, 'k').length >= 10, { timeout: 20_000 });
      expect(versionsOf(receiver, secret, 'k')).to.deep.equal(upTo(10));
    });
  });

  it('a PostgreSQL connection cut: delivery stops while the database is away and goes on after, missing nothing', async function () {
    await requirePostgres(this);
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    const c = await startTestCoffer({ env: { ...pgEnv(testSchema(), relay.url()), ...ALLOW } });
    try {
      const made = await c.call('PUT', '/v1/sys/webhooks/cut', {
        json: { url: receiver.url, namespaces: ['cut'] },
      });
      const secret = String(made.body.secret);
      for (const v of ['1', '2']) await c.put('cut/k', v);
      await eventually(() => versionsOf(receiver, secret, 'k').length >= 2);
      await relay.cut();
      // Long enough for the delivery's reads and its lease's renewal to fail.
      await new Promise((r) => setTimeout(r, 4_000));
      await relay.start(relay.port);
      let written = 0;
      for (let i = 0; written < 2 && i < 50; i++) {
        const res = await c.call('PUT', '/v1/kv/cut/k', { json: { value: 'y', type: 'secret' } });
        if (res.status === 200) written++;
        else await new Promise((r) => setTimeout(r, 200));
      }
      const latest = (await c.call('GET', '/v1/kv/cut/k')).body.version as number;
      await eventually(() => versionsOf(receiver, secret, 'k').length >= latest, {
        timeout: 30_000,
      });
      expect(versionsOf(receiver, secret, 'k')).to.deep.equal(upTo(latest));
    } finally {
      await c.close();
      await relay.cut();
      await dropTestSchemas();
    }
  });
});
