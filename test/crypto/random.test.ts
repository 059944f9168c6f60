import { expect } from 'chai';
import { randomNonce } from '../../src/crypto/random.js';

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
