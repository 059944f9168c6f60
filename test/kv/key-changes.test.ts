import { getEventListeners } from 'node:events';
import { expect } from 'chai';
import { KeyChanges } from '../../src/kv/key-changes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long `wait` took to settle, and what it settled with. */
async function timed(wait: Promise<boolean>): Promise<{ woken: boolean; ms: number }> {
  const started = performance.now();
  const woken = await wait;
  return { woken, ms: performance.now() - started };
}

describe("a hold's waits (kv/key-changes.ts): one timer and one abort listener kept from one wait to the next", () => {
  it('answers false at each wait’s own deadline, later or earlier than the one before, and true when woken', async () => {
    const changes = new KeyChanges(10);
    const hold = changes.hold('', undefined, undefined, true);
    try {
      // Woken well before its deadline: its timer, set for 800 ms, stays.
      const first = hold.next(Date.now() + 800);
      await sleep(20);
      changes.heardEvery();
      expect(await first).to.equal(true);
      // A deadline earlier than the timer's: answered at it, not at the timer's.
      const earlier = await timed(hold.next(Date.now() + 60));
      expect(earlier.woken).to.equal(false);
      expect(earlier.ms).to.be.within(50, 600);
      // One later than the timer the wait before set (80 ms): answered at its own, not when that fires.
      const woken = hold.next(Date.now() + 80);
      changes.heardEvery();
      expect(await woken).to.equal(true);
      const later = await timed(hold.next(Date.now() + 200));
      expect(later.woken).to.equal(false);
      expect(later.ms).to.be.at.least(190);
    } finally {
      hold.release();
    }
  });

  it('listens once to a signal across its waits, answers false when it aborts, and lets it go when released', async () => {
    const changes = new KeyChanges(10);
    const hold = changes.hold('', undefined, undefined, true);
    const gone = new AbortController();
    for (let i = 0; i < 5; i++) {
      const wait = hold.next(Date.now() + 10_000, gone.signal);
      changes.heardEvery();
      expect(await wait).to.equal(true);
    }
    expect(getEventListeners(gone.signal, 'abort')).to.have.length(1);
    const aborted = timed(hold.next(Date.now() + 10_000, gone.signal));
    await sleep(10);
    gone.abort();
    const { woken, ms } = await aborted;
    expect(woken).to.equal(false);
    expect(ms).to.be.below(1_000);
    hold.release();
    const other = new AbortController();
    const again = changes.hold('', undefined, undefined, true);
    const pending = timed(again.next(Date.now() + 10_000, other.signal));
    // Released while it waits: the wait answers false at once, and neither its signal nor a timer is held.
    again.release();
    expect((await pending).woken).to.equal(false);
    expect((await pending).ms).to.be.below(1_000);
    expect(getEventListeners(other.signal, 'abort')).to.have.length(0);
    expect(changes.size).to.equal(0);
  });
});
