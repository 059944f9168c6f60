import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

describe("webhooks read the log through the process's event feed (kv/event-feed.ts)", function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let receiver: WebhookReceiver;
  before(async () => {
    c = await startTestCoffer({ env: { COFFER_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await c?.close();
    await receiver?.close();
  });

  it('one read of the log serves every webhook woken by a change, and each still gets every event', async () => {
    const WEBHOOKS = 5;
    const WRITES = 20;
    for (let i = 0; i < WEBHOOKS; i++)
      expect(
        (await c.call('PUT', `/v1/sys/webhooks/reads-${i}`, { json: { url: receiver.url } }))
          .status,
      ).to.equal(201);
    // The deliveries start at the log's end: one write each has gone out before the count begins.
    expect((await c.put('wh-reads/warm', 'v')).status).to.be.within(200, 201);
    await eventually(() => receiver.received.length >= WEBHOOKS, { timeout: 15_000 });
    // The server's own log, its reads counted (the feed reads with `read`, a delivery alone with `after`).
    const log = c.app.records.events;
    let reads = 0;
    const read = log.read.bind(log);
    const readAfter = log.after.bind(log);
    log.read = (position, limit) => {
      reads++;
      return read(position, limit);
    };
    log.after = (position, limit) => {
      reads++;
      return readAfter(position, limit);
    };
    try {
      const before = receiver.received.length;
      for (let i = 0; i < WRITES; i++)
        expect((await c.put(`wh-reads/k${i}`, `v${i}`)).status).to.be.within(200, 201);
      await eventually(() => receiver.received.length >= before + WEBHOOKS * WRITES, {
        timeout: 15_000,
      });
      // Each webhook got each write once: as many messages as that, naming every write (a message's
      // webhook-id is its event's, the same for every webhook).
      const got = receiver.received.slice(before);
      expect(got).to.have.length(WEBHOOKS * WRITES);
      expect(new Set(got.map((r) => r.headers['webhook-id'])).size).to.equal(WRITES);
      // A read per webhook per change would be WEBHOOKS × WRITES; shared, about one per change.
      expect(reads, `${reads} reads`).to.be.below(2 * WRITES);
    } finally {
      log.read = read;
      log.after = readAfter;
    }
  });
});
