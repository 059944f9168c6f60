/**
 * XChaCha20-Poly1305 (libsodium's IETF AEAD) with random 24-byte nonces from node's CSPRNG (pooled:
 * random.ts's randomNonce).
 *
 * Every way an open can fail (wrong key, bad tag, wrong associated data, truncated input) raises the
 * same SealedDataError, so nothing about the failure leaks to a caller.
 */
import sodium from 'libsodium-wrappers';
import { randomNonce } from './random.js';

export const KEY_BYTES = 32;
export const NONCE_BYTES = 24;

export class SealedDataError extends Error {
  constructor() {
    super('sealed data failed to open');
    this.name = 'SealedDataError';
  }
}

/** Resolves once libsodium's WebAssembly module is ready; call once at start-up. */
export async function sodiumReady(): Promise<void> {
  await sodium.ready;
}

export interface Sealed {
  readonly nonce: Uint8Array;
  readonly ciphertext: Uint8Array;
}

export function aeadSeal(key: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Sealed {
  const nonce = randomNonce(NONCE_BYTES);
  const ciphertext = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
    plaintext,
    aad,
    null,
    nonce,
    key,
  );
  return { nonce, ciphertext };
}

export function aeadOpen(key: Uint8Array, sealed: Sealed, aad: Uint8Array): Uint8Array {
  try {
    return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
      null,
      sealed.ciphertext,
      aad,
      sealed.nonce,
      key,
    );
  } catch {
    throw new SealedDataError();
  }
}
