import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { auditFiles, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { dropTestSchemas, requirePostgres, testSchema } from '../support/postgres.js';
import { pgEnv } from '../support/shared-servers.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const ALLOW = { COFFER_WEBHOOKS_ALLOW_PRIVATE: 'true' };

interface Message {
  readonly id: string;
  readonly type: string;
  readonly data: {
    position: number;
    operation: string;
    namespace: string;
    key: string;
    version: number;
    token_id?: string;
    revoked?: string[];
  };
}

/** Every message the receiver took, each signature checked with the standardwebhooks package. */
function verified(receiver: WebhookReceiver, secret: string): Message[] {
  const wh = new Webhook(secret);
  return receiver.received.map((r) => {
    const body = wh.verify(r.body, r.headers as Record<string, string>) as Omit<Message, 'id'>;
    return { id: String(r.headers['webhook-id']), ...body };
  });
}

/** The messages once each (a repeat carries the same webhook-id), in the order first received. */
function once(messages: readonly Message[]): Message[] {
  const seen = new Set<string>();
  return messages.filter((m) => !seen.has(m.id) && seen.add(m.id));
}

async function putWebhook(c: TestCoffer, name: string, body: object) {
  return c.call('PUT', `/v1/sys/webhooks/${name}`, { json: body });
}

describe('signed webhooks: /v1/sys/webhooks', function () {
  this.timeout(60_000);

  describe('delivery', () => {
    const backends: [string, () => Record<string, string>][] = [
      ['LMDB', () => ALLOW],
      ['PostgreSQL', () => ({ ...ALLOW, ...pgEnv(testSchema()) })],
    ];
    for (const [backend, env] of backends)
      describe(`on ${backend}`, () => {
        let c: TestCoffer;
        let receiver: WebhookReceiver;
        before(async function () {
          if (backend === 'PostgreSQL') await requirePostgres(this);
          c = await startTestCoffer({ env: env() });
          receiver = await startWebhookReceiver();
        });
        after(async () => {
          await c?.close();
          await receiver?.close();
          if (backend === 'PostgreSQL') await dropTestSchemas();
        });

        it('sends each change its filters select, signed (Standard Webhooks), in commit order, never a value; the secret is shown once', async () => {
          await c.put('wh/before/k', 'made-before-the-webhook');
          const made = await putWebhook(c, 'deploys', {
            url: receiver.url,
            namespaces: ['wh/a/*'],
          });
          expect(made.status).to.equal(201);
          const secret = String(made.body.secret);
          expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
          expect(made.headers.get('cache-control')).to.equal('no-store');
          await c.put('wh/a/x', 'first-secret-value');
          await c.put('wh/b/y', 'not-selected-value');
          await c.put('wh/a/deeper/z', 'second-secret-value');
          await c.call('DELETE', '/v1/kv/wh/a/x');
          await eventually(() => receiver.received.length >= 3, { timeout: 15_000 });
          const got = once(verified(receiver, secret));
          expect(got.map((m) => [m.type, m.data.namespace, m.data.key])).to.deep.equal([
            ['kv.write', 'wh/a', 'x'],
            ['kv.write', 'wh/a/deeper', 'z'],
            ['kv.delete', 'wh/a', 'x'],
          ]);
          expect(got[0]!.data.position).to.be.below(got[1]!.data.position);
          expect(got[1]!.data.position).to.be.below(got[2]!.data.position);
          for (const r of receiver.received) {
            expect(r.body).to.not.match(/secret-value/);
            expect(r.headers['user-agent']).to.equal('Coffer-Webhooks');
          }
          // A signature under another secret does not verify.
          expect(() =>
            verified(receiver, `whsec_${Buffer.alloc(32, 7).toString('base64')}`),
          ).to.throw();
          // Never shown again: not on a read, a listing or a change that does not rotate it.
          const read = await c.call('GET', '/v1/sys/webhooks/deploys');
          expect(read.status).to.equal(200);
          expect(read.body).to.not.have.property('secret');
          expect(read.body).to.include({ url: receiver.url });
          // The cursor is stored at most every second: `behind` reaches 0 once it is.
          await eventually(
            async () => (await c.call('GET', '/v1/sys/webhooks/deploys')).body.behind === 0,
            { timeout: 5_000 },
          );
          const listed = await c.call('GET', '/v1/sys/webhooks');
          expect(JSON.stringify(listed.body)).to.not.include(secret);
          const changed = await putWebhook(c, 'deploys', {
            url: receiver.url,
            namespaces: ['wh/a/*'],
          });
          expect(changed.status).to.equal(200);
          expect(changed.body).to.not.have.property('secret');
          // Every attempt is audited; the secret is in no audit file.
          await eventually(
            () =>
              auditLines(c.config.audit.dir!).filter(
                (l) => l.event === 'webhook.delivery' && l.webhook === 'deploys' && l.delivered,
              ).length >= 3,
          );
          for (const file of auditFiles(c.config.audit.dir!))
            expect(readFileSync(file, 'utf8')).to.not.include(secret.slice(6));
        });

        it('rotates the secret: what follows is signed with the new one only', async () => {
          receiver.received.length = 0;
          const rotated = await putWebhook(c, 'deploys', {
            url: receiver.url,
            namespaces: ['wh/a/*'],
            rotate_secret: true,
          });
          expect(rotated.status).to.equal(200);
          const secret = String(rotated.body.secret);
          await c.put('wh/a/after-rotation', 'v');
          await eventually(() => receiver.received.length >= 1, { timeout: 15_000 });
          expect(once(verified(receiver, secret)).map((m) => m.data.key)).to.deep.equal([
            'after-rotation',
          ]);
        });

        it("sends a token's revocation to a webhook whose kinds name it, and no key's change", async () => {
          receiver.received.length = 0;
          const made = await putWebhook(c, 'revocations', {
            url: receiver.url,
            kinds: ['token.revoke'],
          });
          const secret = String(made.body.secret);
          const victim = await c.token({ role: 'reader' });
          const id = (await c.call('GET', '/v1/auth/me', { token: victim })).body.id as string;
          // Not under wh/a/* (the other webhook's): only this webhook could be sent it, and is not.
          await c.put('wh/z/not-for-it', 'v');
          await c.call('DELETE', `/v1/auth/token/${id}`);
          await eventually(() => receiver.received.length >= 1, { timeout: 15_000 });
          await new Promise((r) => setTimeout(r, 300));
          const got = once(verified(receiver, secret));
          expect(got.map((m) => m.type)).to.deep.equal(['token.revoke']);
          expect(got[0]!.data).to.deep.include({ token_id: id, revoked: [id] });
          expect((await c.call('DELETE', '/v1/sys/webhooks/revocations')).status).to.equal(204);
        });

        it('tests a webhook on demand, and once deleted sends it nothing more', async () => {
          receiver.received.length = 0;
          const tested = await c.call('POST', '/v1/sys/webhooks/deploys/test');
          expect(tested.status).to.equal(200);
          expect(tested.body).to.include({ delivered: true, status: 204 });
          expect(receiver.received).to.have.length(1);
          expect(JSON.parse(receiver.received[0]!.body)).to.include({ type: 'webhook.test' });
          expect(receiver.received[0]!.headers['webhook-id']).to.equal(tested.body.message_id);
          expect((await c.call('DELETE', '/v1/sys/webhooks/deploys')).status).to.equal(204);
          expect((await c.call('GET', '/v1/sys/webhooks/deploys')).status).to.equal(404);
          expect((await c.call('POST', '/v1/sys/webhooks/deploys/test')).status).to.equal(404);
          await c.put('wh/a/after-delete', 'v');
          await new Promise((r) => setTimeout(r, 2500));
          expect(receiver.received).to.have.length(1);
        });
      });
  });

  describe('a receiver down for a minute', function () {
    this.timeout(180_000);
    let c: TestCoffer;
    let receiver: WebhookReceiver;
    before(async () => {
      c = await startTestCoffer({ env: ALLOW });
      receiver = await startWebhookReceiver();
    });
    after(async () => {
      await c?.close();
      await receiver?.close();
    });

    it('gets every event once it is back, in key order, each repeat with its first webhook-id; the outage shows in the metrics and the audit log', async () => {
      const made = await putWebhook(c, 'outage', { url: receiver.url, namespaces: ['out/*'] });
      const secret = String(made.body.secret);
      await receiver.down();
      const written: string[] = [];
      for (let i = 1; i <= 10; i++)
        for (const key of ['a', 'b']) {
          await c.put(`out/${key}`, `v${i}`);
          written.push(`${key}${i}`);
        }
      await eventually(
        async () =>
          /coffer_webhook_failing\{webhook="outage"\} 1/.test(
            (await c.call('GET', '/v1/sys/metrics')).text,
          ),
        { timeout: 15_000 },
      );
      await new Promise((r) => setTimeout(r, 60_000));
      expect(receiver.received).to.have.length(0);
      await receiver.up();
      await eventually(() => once(verified(receiver, secret)).length >= 20, { timeout: 60_000 });
      const got = once(verified(receiver, secret));
      expect(got.map((m) => `${m.data.key}${m.data.version}`)).to.deep.equal(written);
      const failed = auditLines(c.config.audit.dir!).filter(
        (l) => l.event === 'webhook.delivery' && l.webhook === 'outage' && l.delivered === false,
      );
      expect(failed.length).to.be.at.least(3);
      expect(String(failed[0]!.error)).to.match(/could not reach the receiver/);
      await eventually(async () =>
        /coffer_webhook_failing\{webhook="outage"\} 0/.test(
          (await c.call('GET', '/v1/sys/metrics')).text,
        ),
      );
    });
  });

  describe('who may, and where to (SSRF)', () => {
    let c: TestCoffer;
    let receiver: WebhookReceiver;
    before(async () => {
      c = await startTestCoffer();
      receiver = await startWebhookReceiver();
    });
    after(async () => {
      await c?.close();
      await receiver?.close();
    });

    it('refuses loopback, private, link-local and reserved destinations unless the server allows them', async () => {
      const port = new URL(receiver.url).port;
      for (const url of [
        receiver.url,
        `http://localhost:${port}/`,
        'http://[::1]/',
        'http://[::ffff:127.0.0.1]/',
        'http://2130706433/',
        'http://0.0.0.0/',
        'http://10.1.2.3/',
        'http://172.16.0.1/',
        'http://192.168.1.1/',
        'http://100.64.0.1/',
        'http://169.254.169.254/latest/meta-data/',
        'http://[fd00::1]/',
        'http://[fe80::1]/',
        // IANA's special-purpose ranges that carry or reach a private address, or are no unicast.
        'http://[::127.0.0.1]/',
        'http://[::ffff:0:7f00:1]/',
        'http://[2002:7f00:1::1]/',
        'http://[64:ff9b::a9fe:a9fe]/',
        'http://[64:ff9b:1::1]/',
        'http://[2001::1]/',
        'http://[2001:2::1]/',
        'http://[3fff::1]/',
        'http://[5f00::1]/',
        'http://192.88.99.1/',
        'http://255.255.255.255/',
      ]) {
        const refused = await putWebhook(c, 'ssrf', { url });
        expect(refused.status, url).to.equal(400);
        expect(refused.body.detail, url).to.match(/public address|COFFER_WEBHOOKS_ALLOW_PRIVATE/);
      }
      expect((await c.call('GET', '/v1/sys/webhooks')).body.webhooks).to.deep.equal([]);
      // A public address is taken (delivery to it is another matter on a closed network).
      for (const url of ['https://93.184.215.14/hook', 'https://[2606:4700::6810:84e5]/hook']) {
        const taken = await putWebhook(c, 'public', { url });
        expect(taken.status, url).to.equal(201);
        expect((await c.call('DELETE', '/v1/sys/webhooks/public')).status).to.equal(204);
      }
    });

    it('refuses URLs that are not http(s), hold credentials or a fragment, bad names, patterns and kinds; and callers without manage_webhooks', async () => {
      for (const [body, field] of [
        [{ url: 'ftp://93.184.215.14/' }, '/url'],
        [{ url: 'https://user:pw@93.184.215.14/' }, '/url'],
        [{ url: 'https://93.184.215.14/#x' }, '/url'],
        [{ url: 'not a url' }, '/url'],
        [{ url: 'https://93.184.215.14/', namespaces: ['a/*/b'] }, '/namespaces/0'],
      ] as const) {
        const refused = await putWebhook(c, 'bad', body);
        expect(refused.status, JSON.stringify(body)).to.equal(400);
        expect(
          JSON.stringify(refused.body.errors ?? refused.body),
          JSON.stringify(body),
        ).to.include(field);
        expect(JSON.stringify(refused.body)).to.not.include('pw@');
      }
      for (const body of [
        { url: 'https://93.184.215.14/', kinds: ['write', 'nonsense'] },
        { url: 'https://93.184.215.14/', extra: true },
        {},
      ])
        expect((await putWebhook(c, 'bad', body)).status, JSON.stringify(body)).to.equal(400);
      expect((await putWebhook(c, 'Bad_Name', { url: 'https://93.184.215.14/' })).status).to.equal(
        400,
      );
      const admin = String(
        (await c.call('POST', '/v1/auth/token', { json: { role: 'admin' } })).body.token,
      );
      for (const [method, path] of [
        ['GET', '/v1/sys/webhooks'],
        ['PUT', '/v1/sys/webhooks/mine'],
        ['POST', '/v1/sys/webhooks/mine/test'],
        ['DELETE', '/v1/sys/webhooks/mine'],
      ] as const)
        expect(
          (await c.call(method, path, { token: admin, json: { url: 'https://93.184.215.14/' } }))
            .status,
          `${method} ${path}`,
        ).to.equal(403);
    });
  });
});
