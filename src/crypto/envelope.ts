/**
 * Envelope encryption of stored values, and the MAC of config values.
 *
 * A secret version is sealed with a fresh random data key; the data key is wrapped under the keyring's
 * active version. Both seals bind the record's identity as associated data, so ciphertext copied to
 * another namespace, key, version or type fails to open:
 *
 *   AAD = "coffer/v1" 0x00 type 0x00 namespace 0x00 key 0x00 version [0x00 "w"]   (see `identityBytes`)
 *
 * (0x00 "w" when the version's writer could read every value of its namespace: `writerReadsAll`.)
 *
 * Names cannot contain 0x00 (kv/names.ts), so the encoding is unambiguous. A config version stays
 * readable in storage but carries an HMAC-SHA256 over the same identity and the value.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ValueType } from '../model/value-types.js';
import { aeadOpen, aeadSeal, KEY_BYTES, SealedDataError } from './aead.js';
import type { Keyring } from './keyring.js';
import { randomKey } from './random.js';

export interface RecordIdentity {
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: ValueType;
  /**
   * Its writer could read every value of its namespace (kv/write-rights.ts, readsAll): bound into the
   * associated data and the MAC, so that no one without the keys can add or take off the mark.
   */
  readonly writerReadsAll?: boolean;
}

/** A sealed secret as stored: keyring version, wrapped data key, and the value's ciphertext. */
export interface SealedSecret {
  readonly keyVersion: number;
  readonly wrapNonce: Uint8Array;
  readonly wrappedKey: Uint8Array;
  readonly nonce: Uint8Array;
  readonly ciphertext: Uint8Array;
}

export interface ConfigSeal {
  readonly keyVersion: number;
  readonly mac: Uint8Array;
}

// ignoreBOM keeps a leading U+FEFF: it is part of the value, not a byte-order mark to drop.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * UTF-8 by Buffer.from, as TextEncoder would write it (a lone surrogate as U+FFFD alike), at a seventh of its
 * cost for strings this short (133 against 926 ns measured: TextEncoder allocates a new buffer each time).
 */
export function identityBytes(id: RecordIdentity): Uint8Array {
  // The mark follows the version's digits, so a record without it has exactly the bytes it always had.
  const mark = id.writerReadsAll === true ? '\0w' : '';
  return Buffer.from(
    `coffer/v1\0${id.type}\0${id.namespace}\0${id.key}\0${id.version}${mark}`,
    'utf8',
  );
}

export function sealSecret(keyring: Keyring, id: RecordIdentity, value: string): SealedSecret {
  const keyVersion = keyring.activeVersion;
  const aad = identityBytes(id);
  const dataKey = randomKey(KEY_BYTES);
  const plaintext = Buffer.from(value, 'utf8');
  const sealedValue = aeadSeal(dataKey, plaintext, aad);
  const wrapped = aeadSeal(keyring.subkey(keyVersion, 'wrap-data-key')!, dataKey, aad);
  dataKey.fill(0);
  plaintext.fill(0);
  return {
    keyVersion,
    wrapNonce: wrapped.nonce,
    wrappedKey: wrapped.ciphertext,
    nonce: sealedValue.nonce,
    ciphertext: sealedValue.ciphertext,
  };
}

/** The data key of a sealed secret, unwrapped with the keyring version it names; the caller zeroes it. */
function unwrapDataKey(keyring: Keyring, aad: Uint8Array, sealed: SealedSecret): Uint8Array {
  const wrapKey = keyring.subkey(sealed.keyVersion, 'wrap-data-key');
  if (!wrapKey) throw new SealedDataError();
  return aeadOpen(wrapKey, { nonce: sealed.wrapNonce, ciphertext: sealed.wrappedKey }, aad);
}

/** The plaintext of a sealed secret; throws SealedDataError for every kind of failure. */
export function openSecret(keyring: Keyring, id: RecordIdentity, sealed: SealedSecret): string {
  const aad = identityBytes(id);
  const dataKey = unwrapDataKey(keyring, aad, sealed);
  try {
    return decoder.decode(
      aeadOpen(dataKey, { nonce: sealed.nonce, ciphertext: sealed.ciphertext }, aad),
    );
  } catch {
    throw new SealedDataError();
  } finally {
    dataKey.fill(0);
  }
}

function configMac(
  keyring: Keyring,
  keyVersion: number,
  id: RecordIdentity,
  value: string,
): Buffer | undefined {
  const key = keyring.subkey(keyVersion, 'mac-config');
  if (!key) return undefined;
  return createHmac('sha256', key)
    .update(identityBytes(id))
    .update(new Uint8Array([0]))
    .update(value, 'utf8')
    .digest();
}

export function sealConfig(keyring: Keyring, id: RecordIdentity, value: string): ConfigSeal {
  const keyVersion = keyring.activeVersion;
  return { keyVersion, mac: configMac(keyring, keyVersion, id, value)! };
}

/** Throws SealedDataError unless the MAC matches (compared in constant time). */
export function verifyConfig(
  keyring: Keyring,
  id: RecordIdentity,
  value: string,
  seal: ConfigSeal,
): void {
  const expected = configMac(keyring, seal.keyVersion, id, value);
  if (!expected || seal.mac.length !== expected.length || !timingSafeEqual(expected, seal.mac)) {
    throw new SealedDataError();
  }
}

/**
 * The same sealed secret with its data key wrapped under the keyring's active version instead. The value's
 * ciphertext is untouched: only the 32-byte data key is unwrapped and wrapped again.
 */
export function rewrapSecret(
  keyring: Keyring,
  id: RecordIdentity,
  sealed: SealedSecret,
): SealedSecret {
  const aad = identityBytes(id);
  const dataKey = unwrapDataKey(keyring, aad, sealed);
  try {
    const keyVersion = keyring.activeVersion;
    const wrapped = aeadSeal(keyring.subkey(keyVersion, 'wrap-data-key')!, dataKey, aad);
    return { ...sealed, keyVersion, wrapNonce: wrapped.nonce, wrappedKey: wrapped.ciphertext };
  } finally {
    dataKey.fill(0);
  }
}

/** A config value's MAC under the active version, after checking the old one (a tampered value stays caught). */
export function remacConfig(
  keyring: Keyring,
  id: RecordIdentity,
  value: string,
  seal: ConfigSeal,
): ConfigSeal {
  verifyConfig(keyring, id, value, seal);
  return sealConfig(keyring, id, value);
}
