import { expect } from 'chai';
import { BoundedCache } from '../src/bounded-cache.js';

describe('BoundedCache', () => {
  it('keeps every entry set within the last half of its capacity, and never more than its capacity', () => {
    const cache = new BoundedCache<string, number>(100);
    const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
    for (const [i, key] of keys.entries()) cache.set(key, i);
    // The last 50 set are all there, with their values.
    for (const [i, key] of keys.entries()) if (i >= 950) expect(cache.get(key), key).to.equal(i);
    // At most 100 of the 1,000 are held (counted on a second cache filled alike: the reads above count).
    const counted = new BoundedCache<string, number>(100);
    for (const [i, key] of keys.entries()) counted.set(key, i);
    const held = keys.filter((key) => counted.get(key) !== undefined);
    expect(held.length).to.be.within(50, 100);
  });

  it('keeps an entry that is read as often as the cache turns over, however many others pass through', () => {
    const cache = new BoundedCache<string, number>(100);
    cache.set('kept', 1);
    for (let i = 0; i < 10_000; i++) {
      cache.set(`passing${i}`, i);
      if (i % 40 === 0) expect(cache.get('kept'), `after ${i}`).to.equal(1);
    }
    expect(cache.get('kept')).to.equal(1);
    expect(cache.get('passing0')).to.equal(undefined);
  });

  it('answers the value set last, and nothing once deleted, whichever generation held it', () => {
    const cache = new BoundedCache<string, number>(4);
    cache.set('a', 1);
    cache.set('b', 2); // the newer generation is full: 'a' and 'b' are the older now
    cache.set('a', 3); // a newer value beside the older copy
    expect(cache.get('a')).to.equal(3);
    cache.set('c', 4); // 'a' (3) and 'c' become the older; 'a' (1) is dropped
    expect(cache.get('a')).to.equal(3);
    cache.delete('a');
    expect(cache.get('a')).to.equal(undefined);
    expect(cache.get('c')).to.equal(4);
    cache.delete('c');
    expect(cache.get('c')).to.equal(undefined);
  });
});
