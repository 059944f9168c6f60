import { expect } from 'chai';
import { randomKey, randomNonce } from '../../src/crypto/random.js';

describe('pooled nonces (crypto/random.ts)', () => {
  it('hands out each pooled byte once: 10,000 nonces over many refills, all different, each its own copy', () => {
    const seen = new Set<string>();
    let previous: Buffer | undefined;
    for (let i = 0; i < 10_000; i++) {
      const nonce = randomNonce(24);
      expect(nonce).to.have.length(24);
      seen.add(nonce.toString('hex'));
      if (previous) {
        // Writing over one nonce changes no other.
        const next = Buffer.from(nonce);
        previous.fill(0);
        expect(nonce.equals(next)).to.equal(true);
      }
      previous = nonce;
    }
    expect(seen.size).to.equal(10_000);
    // Lengths that do not divide the pool still come whole.
    for (const length of [1, 7, 4095, 5000]) expect(randomNonce(length)).to.have.length(length);
  });
});

describe('pooled data keys (crypto/random.ts)', () => {
  it('hands out each pooled byte once: 10,000 keys over many refills, all different, each in memory of its own', () => {
    const seen = new Set<string>();
    const keys: Buffer[] = [];
    for (let i = 0; i < 10_000; i++) {
      const key = randomKey(32);
      expect(key).to.have.length(32);
      // Not a slice of node's shared pool, nor of the key pool: wiping it touches nothing else.
      expect(key.buffer.byteLength).to.equal(32);
      seen.add(key.toString('hex'));
      keys.push(key);
    }
    expect(seen.size).to.equal(10_000);
    // A key zeroed after use leaves the keys given before and after it as they were.
    const [before, wiped, after] = [keys[0]!, keys[1]!, keys[2]!].map((k) => Buffer.from(k));
    keys[1]!.fill(0);
    expect(keys[0]!.equals(before!)).to.equal(true);
    expect(keys[2]!.equals(after!)).to.equal(true);
    expect(wiped!.equals(Buffer.alloc(32))).to.equal(false);
    // Lengths that do not divide the pool, or exceed it, still come whole.
    for (const length of [1, 7, 1023, 5000]) expect(randomKey(length)).to.have.length(length);
  });
});
