import { randomBytes } from 'node:crypto';

/**
 * All randomness comes from node's CSPRNG. (libsodium-wrappers' randombytes_buf is also a CSPRNG but
 * costs ~58 µs a call here against ~2 µs for crypto.randomBytes.)
 */
export { randomBytes };

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` characters drawn uniformly from [0-9A-Za-z] by rejection sampling of the bytes `nextByte` gives. */
function base62(length: number, nextByte: () => number): string {
  let out = '';
  while (out.length < length) {
    const byte = nextByte();
    // 248 = 62 * 4: bytes at or above it would bias the low characters.
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

/** `length` random characters from [0-9A-Za-z], straight from the CSPRNG. */
export function randomBase62(length: number): string {
  let bytes = randomBytes(length + 8);
  let at = 0;
  return base62(length, () => {
    if (at === bytes.length) {
      bytes = randomBytes(length + 8);
      at = 0;
    }
    return bytes[at++]!;
  });
}

let noncePool = Buffer.alloc(0);
let noncePoolAt = 0;

/**
 * Nonces (public values that must never repeat: an AEAD's 24-byte nonce) cut from a pool of CSPRNG bytes
 * refilled 4 KiB at a time, each byte handed out once and copied into a buffer of its own: one CSPRNG call
 * for about 170 nonces instead of one each (measured: 2.1 µs a call, 0.3 µs a pooled nonce; a durable
 * write seals four or five records). Keys are never drawn from here: they come straight from the CSPRNG.
 */
export function randomNonce(length: number): Buffer {
  if (noncePoolAt + length > noncePool.length) {
    noncePool = randomBytes(Math.max(4096, length));
    noncePoolAt = 0;
  }
  const nonce = Buffer.allocUnsafe(length);
  noncePool.copy(nonce, 0, noncePoolAt, noncePoolAt + length);
  noncePoolAt += length;
  return nonce;
}

/**
 * Base62 identifiers drawn from a pool of CSPRNG bytes refilled 4 KiB at a time: for identifiers made on
 * every request (X-Request-Id), where a randomBytes call each would cost more than the rest of the work.
 * Not for secrets: a token's secret part comes from randomBase62, straight from the CSPRNG.
 */
export class PooledIds {
  private pool = Buffer.alloc(0);
  private at = 0;

  constructor(private readonly length: number) {}

  next(): string {
    return base62(this.length, () => {
      if (this.at >= this.pool.length) {
        this.pool = randomBytes(4096);
        this.at = 0;
      }
      return this.pool[this.at++]!;
    });
  }
}
