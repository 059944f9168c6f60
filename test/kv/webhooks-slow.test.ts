import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { send } from '../support/http-client.js';
import { killAll, serveSettings, startProcess } from '../support/process.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

/** A receiver that answers 200 at once and then sends its body one byte every `everyMs`, for ever. */
async function trickler(
  everyMs: number,
): Promise<{ url: string; opened: number[]; closed: number[]; close(): Promise<void> }> {
  const opened: number[] = [];
  const closed: number[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    opened.push(Date.now());
    res.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => res.write('.'), everyMs);
    res.on('close', () => {
      clearInterval(timer);
      closed.push(Date.now());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`,
    opened,
    closed,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('a webhook receiver that answers slowly', function () {
  this.timeout(90_000);

  it('holds an attempt 10 s at the most, and removing its webhook neither stalls the dispatcher nor makes another webhook deliver twice (two workers)', async () => {
    const slow = await trickler(2_000);
    const fast = await startWebhookReceiver();
    const { env, root } = serveSettings(2, { COFFER_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    const p = await startProcess(env);
    try {
      expect(
        (await send(p.url, 'PUT', '/v1/sys/webhooks/slow', root, { url: slow.url })).status,
      ).to.equal(201);
      expect(
        (
          await send(p.url, 'PUT', '/v1/sys/webhooks/fast', root, {
            url: fast.url,
            namespaces: ['other'],
          })
        ).status,
      ).to.equal(201);
      await send(p.url, 'PUT', '/v1/kv/slow/k', root, { value: 'v', type: 'config' });
      await eventually(() => slow.opened.length >= 1, {
        what: 'the slow receiver is sent the event',
      });
      // The attempt ends by its whole deadline, though a byte comes every 2 s.
      await eventually(() => slow.closed.length >= 1, {
        what: 'the attempt ended',
        timeout: 15_000,
      });
      expect(slow.closed[0]! - slow.opened[0]!).to.be.within(9_000, 11_500);
      // The next attempt is in flight: removing the webhook ends it, and the dispatcher goes on at once.
      await eventually(() => slow.opened.length >= 2, {
        what: 'a second attempt',
        timeout: 15_000,
      });
      const removed = Date.now();
      expect((await send(p.url, 'DELETE', '/v1/sys/webhooks/slow', root)).status).to.equal(204);
      for (let i = 0; i < 20; i++)
        await send(p.url, 'PUT', `/v1/kv/other/k${i}`, root, { value: `v${i}`, type: 'config' });
      await eventually(() => fast.received.length >= 20, {
        what: 'the other webhook has every event',
        timeout: 20_000,
      });
      expect(Date.now() - removed, 'the other webhook waited on the slow one').to.be.below(8_000);
      // Give a second deliverer time to show up, then count: each message once.
      await new Promise((r) => setTimeout(r, 3_000));
      const ids = fast.received.map((r) => String(r.headers['webhook-id']));
      expect(ids.length).to.equal(new Set(ids).size);
      expect(ids.length).to.equal(20);
      const attempts = auditLines(`${env.COFFER_DATA_DIR}/audit`).filter(
        (e) => e.event === 'webhook.delivery' && e.webhook === 'slow',
      );
      expect(attempts[0]?.error).to.equal('no whole answer within 10 s');
    } finally {
      await killAll(p).catch(() => undefined);
      await slow.close();
      await fast.close();
    }
  });
});
