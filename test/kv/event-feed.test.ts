import { expect } from 'chai';
import { EventFeed, READ_GAP_MS } from '../../src/kv/event-feed.js';
import type { StoredEvent } from '../../src/store/event-log.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

describe('the event feed (kv/event-feed.ts): one read of the log serves the changes of READ_GAP_MS', () => {
  let coffer: TestCoffer;
  before(async () => {
    coffer = await startTestCoffer();
  });
  after(async () => {
    await coffer.close();
  });

  it('reads the real log at most once a gap while changes come faster, and hands every event over in order', async () => {
    const log = coffer.app.records.events;
    let reads = 0;
    // The server's own log (LMDB), its reads counted, spaced as on PostgreSQL.
    const feed = new EventFeed(
      {
        read: (position, limit) => {
          reads++;
          return log.read(position, limit);
        },
        after: (position, limit) => log.after(position, limit),
        horizon: () => log.horizon(),
      },
      READ_GAP_MS,
    );
    const start = (await log.horizon()).last;
    await feed.after(start, 500);
    const WRITES = 40;
    const readsBefore = reads;
    const started = performance.now();
    // Each change wakes a reader of the feed, as a change wakes a stream; none waits for the one before.
    const handed: Promise<StoredEvent[]>[] = [];
    for (let i = 0; i < WRITES; i++) {
      expect((await coffer.put(`feed-gap/k${i}`, `v${i}`)).status).to.be.within(200, 201);
      feed.moved();
      handed.push(feed.after(start, 500));
    }
    const results = await Promise.all(handed);
    const elapsed = performance.now() - started;
    const feedReads = reads - readsBefore;
    // The last reader, woken after the last change, is handed every event of them all, in order.
    const last = results.at(-1)!;
    expect(last.map((e) => e.kind === 'kv' && e.key)).to.deep.equal(
      Array.from({ length: WRITES }, (_, i) => `k${i}`),
    );
    for (let i = 1; i < last.length; i++)
      expect(last[i]!.position).to.be.above(last[i - 1]!.position);
    // One read a change would be WRITES reads; spaced, at most one a gap (and the one in flight).
    expect(feedReads).to.be.at.most(Math.ceil(elapsed / READ_GAP_MS) + 2);
    expect(feedReads).to.be.below(WRITES);
  });
});
