/**
 * The seal of the store's own records (token records, the root token record, the audit chain registry):
 * XChaCha20-Poly1305 under the keyring's record key, with the record kind and its full storage key as
 * associated data; records that must stay readable (intent copies, the key index and version counters)
 * get an HMAC over the same instead. So a record whose bytes were changed, that was written by someone
 * without the key (a token record with `role: "admin"` put in by hand), or that was copied or swapped
 * from another key fails to open, and is never used. What it cannot tell is an older valid copy of the
 * same record put back (a replay): see SECURITY.md, "Storage".
 *
 *   sealed   = msgpack { f: 1, n: nonce, c: ciphertext }     plaintext = msgpack of the record
 *   MACed    = mac (MAC_BYTES) ‖ bytes
 *   AAD      = "coffer-record/1" 0x00 kind 0x00 storage key bytes   (the MAC's input: AAD ‖ bytes)
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Packr } from 'msgpackr';
import { aeadOpen, aeadSeal, NONCE_BYTES, SealedDataError, type Sealed } from '../crypto/aead.js';
import type { KeyRange } from '../storage/backend.js';
import { AUDIT_CHAINS_RANGE, COUNTERS_RANGE, INTENT_JOURNAL_RANGE, METAS_RANGE, ROOT_TOKEN_KEY, TOKENS_RANGE } from '../storage/layout.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const FORMAT = 1;
/**
 * HMAC-SHA256 truncated to 128 bits (as RFC 4868 and NIST SP 800-107 allow): forging one still takes 2^128
 * guesses, and the index and counter written with every change stay small.
 */
export const MAC_BYTES = 16;

export type RecordKind = 'token' | 'root-token' | 'audit-chain' | 'intent-copy' | 'kv-meta' | 'kv-counter';

/** Every kind of the store's own records: where it lives and how it is protected (the version records are the kv service's). */
export const RECORD_KINDS: readonly { readonly kind: RecordKind; readonly range: KeyRange; readonly protection: 'seal' | 'mac' }[] = [
  { kind: 'root-token', range: { start: ROOT_TOKEN_KEY, end: Buffer.concat([ROOT_TOKEN_KEY, Buffer.from([0])]) }, protection: 'seal' },
  { kind: 'token', range: TOKENS_RANGE, protection: 'seal' },
  { kind: 'audit-chain', range: AUDIT_CHAINS_RANGE, protection: 'seal' },
  { kind: 'intent-copy', range: INTENT_JOURNAL_RANGE, protection: 'mac' },
  { kind: 'kv-meta', range: METAS_RANGE, protection: 'mac' },
  { kind: 'kv-counter', range: COUNTERS_RANGE, protection: 'mac' },
];

/** The nonce and ciphertext of bytes in the sealed form, or null when they are not in it (nothing is opened). */
export function sealedForm(bytes: Uint8Array): Sealed | null {
  try {
    const stored = packr.unpack(bytes) as { f?: unknown; n?: unknown; c?: unknown } | null;
    if (stored?.f !== FORMAT || !(stored.n instanceof Uint8Array) || stored.n.length !== NONCE_BYTES || !(stored.c instanceof Uint8Array)) return null;
    return { nonce: stored.n, ciphertext: stored.c };
  } catch {
    return null;
  }
}

/** A stored record that failed to open: tampered, forged, moved, or not sealed at all. */
export class RecordIntegrityError extends Error {
  constructor(
    readonly kind: RecordKind,
    /** The storage key, printable (never the value). */
    readonly storageKey: string,
  ) {
    super(`the stored ${kind} record at ${storageKey} failed its integrity check`);
    this.name = 'RecordIntegrityError';
  }
}

/** A storage key in printable form for logs: ASCII as is, other bytes as \xNN. */
export function printableKey(key: Uint8Array): string {
  let out = '';
  for (const byte of key) out += byte >= 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  return out;
}

const AAD_PREFIX = `coffer-record/${FORMAT}\0`;
const SEPARATOR = '\0';

function aad(kind: RecordKind, storageKey: Uint8Array): Uint8Array {
  return Buffer.concat([Buffer.from(`${AAD_PREFIX}${kind}${SEPARATOR}`), storageKey]);
}

/** The record keys: one for sealing, one for MACs (both HKDF of the keyring's permanent root). */
export interface RecordKeys {
  readonly seal: Uint8Array;
  readonly mac: Uint8Array;
}

/** The seal under `holder`'s current keyring (a KeyringHolder; the record keys never change for a store). */
export function recordSealOf(holder: { current(): { recordKeys(): RecordKeys } }): RecordSeal {
  return new RecordSeal(() => holder.current().recordKeys());
}

export class RecordSeal {
  private loaded: RecordKeys | undefined;

  /** `source` gives the record keys; they never change for a store, so it is asked once, on first use. */
  constructor(private readonly source: () => RecordKeys) {}

  private keys(): RecordKeys {
    return (this.loaded ??= this.source());
  }

  seal(kind: RecordKind, storageKey: Uint8Array, record: unknown): Buffer {
    const sealed = aeadSeal(this.keys().seal, packr.pack(record), aad(kind, storageKey));
    return packr.pack({ f: FORMAT, n: sealed.nonce, c: sealed.ciphertext });
  }

  /** The record stored at `storageKey`; throws RecordIntegrityError unless it opens as a `kind` record of that key. */
  open<T>(kind: RecordKind, storageKey: Uint8Array, bytes: Uint8Array): T {
    try {
      const sealed = sealedForm(bytes);
      if (sealed === null) throw new SealedDataError();
      return packr.unpack(aeadOpen(this.keys().seal, sealed, aad(kind, storageKey))) as T;
    } catch {
      throw new RecordIntegrityError(kind, printableKey(storageKey));
    }
  }

  /**
   * For records that stay readable (intent copies, the key index, counters): `bytes` with an HMAC-SHA256
   * (truncated, MAC_BYTES) over the same associated data and the bytes, stored as   mac ‖ bytes.
   */
  authenticate(kind: RecordKind, storageKey: Uint8Array, bytes: Uint8Array): Buffer {
    return Buffer.concat([this.mac(kind, storageKey, bytes), bytes]);
  }

  /** The bytes of an authenticated record; throws RecordIntegrityError unless its MAC matches (constant time). */
  verified(kind: RecordKind, storageKey: Uint8Array, stored: Uint8Array): Buffer {
    const all = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
    const bytes = all.subarray(MAC_BYTES);
    if (all.length < MAC_BYTES || !timingSafeEqual(all.subarray(0, MAC_BYTES), this.mac(kind, storageKey, bytes))) {
      throw new RecordIntegrityError(kind, printableKey(storageKey));
    }
    return bytes;
  }

  private mac(kind: RecordKind, storageKey: Uint8Array, bytes: Uint8Array): Buffer {
    // The associated data in pieces: no buffer is built for it on this path (every read and write).
    return createHmac('sha256', this.keys().mac).update(AAD_PREFIX).update(kind).update(SEPARATOR).update(storageKey).update(bytes).digest().subarray(0, MAC_BYTES);
  }
}

/** The plain msgpack of records as stores of format 1 held them (read only by the upgrade). */
export function unpackPlain<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
