import { randomBytes } from 'node:crypto';

/**
 * All randomness comes from node's CSPRNG. (libsodium-wrappers' randombytes_buf is also a CSPRNG but
 * costs ~58 µs a call here against ~2 µs for crypto.randomBytes.)
 */
export { randomBytes };

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` characters drawn uniformly from [0-9A-Za-z], by rejection sampling of random bytes. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length + 8)) {
      // 248 = 62 * 4: bytes at or above it would bias the low characters.
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}
