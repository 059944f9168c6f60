import { expect } from 'chai';
import { SealedDataError, sodiumReady } from '../../src/crypto/aead.js';
import {
  openSecret,
  type RecordIdentity,
  sealConfig,
  sealSecret,
  verifyConfig,
} from '../../src/crypto/envelope.js';
import { Keyring } from '../../src/crypto/keyring.js';
import { randomBase62 } from '../../src/crypto/random.js';

describe('envelope encryption', () => {
  const id: RecordIdentity = { namespace: 'app/prod', key: 'db', version: 3, type: 'secret' };
  let keyring: Keyring;
  before(async () => {
    await sodiumReady();
    keyring = Keyring.generate(Date.now());
  });

  it('opens what it sealed, including empty and multi-byte values', () => {
    for (const value of ['hunter2', '', 'ünïcødé 🔑', 'x'.repeat(100_000)]) {
      expect(openSecret(keyring, id, sealSecret(keyring, id, value))).to.equal(value);
    }
  });

  it('uses a fresh data key and nonce for every seal', () => {
    const a = sealSecret(keyring, id, 'same');
    const b = sealSecret(keyring, id, 'same');
    expect(Buffer.from(a.ciphertext).equals(Buffer.from(b.ciphertext))).to.equal(false);
    expect(Buffer.from(a.wrappedKey).equals(Buffer.from(b.wrappedKey))).to.equal(false);
  });

  it('fails with one opaque error under another identity, another keyring or tampering', () => {
    const sealed = sealSecret(keyring, id, 'value');
    const attempts: [string, () => unknown][] = [
      ['other key', () => openSecret(keyring, { ...id, key: 'other' }, sealed)],
      ['other namespace', () => openSecret(keyring, { ...id, namespace: 'app' }, sealed)],
      ['other version', () => openSecret(keyring, { ...id, version: 4 }, sealed)],
      ['other type', () => openSecret(keyring, { ...id, type: 'config' }, sealed)],
      ['other keyring', () => openSecret(Keyring.generate(Date.now()), id, sealed)],
      ['unknown keyring version', () => openSecret(keyring, id, { ...sealed, keyVersion: 9 })],
      [
        'flipped ciphertext bit',
        () => openSecret(keyring, id, { ...sealed, ciphertext: flip(sealed.ciphertext) }),
      ],
      [
        'flipped wrapped-key bit',
        () => openSecret(keyring, id, { ...sealed, wrappedKey: flip(sealed.wrappedKey) }),
      ],
      [
        'truncated ciphertext',
        () => openSecret(keyring, id, { ...sealed, ciphertext: sealed.ciphertext.subarray(0, 4) }),
      ],
    ];
    for (const [name, attempt] of attempts) {
      expect(attempt, name).to.throw(SealedDataError, 'sealed data failed to open');
    }
  });

  it('verifies config values and detects an edit or a moved value', () => {
    const cid: RecordIdentity = { ...id, type: 'config' };
    const seal = sealConfig(keyring, cid, 'https://a.example');
    expect(() => verifyConfig(keyring, cid, 'https://a.example', seal)).to.not.throw();
    expect(() => verifyConfig(keyring, cid, 'https://b.example', seal)).to.throw(SealedDataError);
    expect(() => verifyConfig(keyring, { ...cid, key: 'x' }, 'https://a.example', seal)).to.throw(
      SealedDataError,
    );
    expect(() =>
      verifyConfig(keyring, cid, 'https://a.example', { ...seal, mac: flip(seal.mac) }),
    ).to.throw(SealedDataError);
  });

  it('round-trips the keyring through its serialized form', () => {
    const again = Keyring.deserialize(keyring.serialize());
    const sealed = sealSecret(keyring, id, 'portable');
    expect(openSecret(again, id, sealed)).to.equal('portable');
  });
});

describe('random names', () => {
  it('draws base62 strings of the asked length, with every character reachable', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const s = randomBase62(43);
      expect(s).to.match(/^[0-9A-Za-z]{43}$/);
      for (const ch of s) seen.add(ch);
    }
    expect(seen.size).to.equal(62);
  });
});

function flip(bytes: Uint8Array): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[copy.length - 1]! ^= 1;
  return copy;
}
