/**
 * The seal of the store's own records (token records, the root token record, the audit chain registry, the
 * audit lines kept on shared storage):
 * XChaCha20-Poly1305 under the keyring's record key, with the record kind and its full storage key as
 * associated data; records that must stay readable (intent copies, the key index, version counters, the
 * keyring generation, the rewrap state) get a MAC over the same instead: keyed BLAKE2b (RFC 7693's keyed
 * mode, libsodium's crypto_generichash) with a 128-bit tag. So a record whose bytes were changed, that was written by someone
 * without the key (a token record with `role: "admin"` put in by hand), or that was copied or swapped
 * from another key fails to open, and is never used. What it cannot tell is an older valid copy of the
 * same record put back (a replay): see SECURITY.md, "Storage".
 *
 *   sealed   = msgpack { f: 1, n: nonce, c: ciphertext }     plaintext = msgpack of the record
 *   MACed    = mac (MAC_BYTES) ‖ bytes      mac = BLAKE2b-128(key = record MAC key, AAD ‖ bytes)
 *   AAD      = "coffer-record/1" 0x00 kind 0x00 storage key bytes
 */
import { timingSafeEqual } from 'node:crypto';
import sodium from 'libsodium-wrappers';
import { Packr } from 'msgpackr';
import { aeadOpen, aeadSeal, NONCE_BYTES, type Sealed, SealedDataError } from '../crypto/aead.js';
import type { RecordKind } from './record-kinds.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const FORMAT = 1;
/**
 * A 128-bit tag (BLAKE2b's output length is a parameter, so this is not a truncation): forging one takes
 * 2^128 guesses, and the index written with every change stays small. BLAKE2b rather than HMAC-SHA256
 * because it runs on every write: one call, about a third of HMAC's cost here (docs/performance.md).
 */
export const MAC_BYTES = 16;

export type { RecordKind } from './record-kinds.js';

/** The nonce and ciphertext of bytes in the sealed form, or null when they are not in it (nothing is opened). */
export function sealedForm(bytes: Uint8Array): Sealed | null {
  try {
    const stored = packr.unpack(bytes) as { f?: unknown; n?: unknown; c?: unknown } | null;
    if (
      stored?.f !== FORMAT ||
      !(stored.n instanceof Uint8Array) ||
      stored.n.length !== NONCE_BYTES ||
      !(stored.c instanceof Uint8Array)
    )
      return null;
    return { nonce: stored.n, ciphertext: stored.c };
  } catch {
    return null;
  }
}

/** A stored record that failed to open (tampered, forged, moved, or not sealed at all), or was found older than it must be. */
export class RecordIntegrityError extends Error {
  constructor(
    readonly kind: RecordKind,
    /** The storage key, printable (never the value). */
    readonly storageKey: string,
    /** What is wrong with it, in words that name no content. */
    readonly problem = 'failed its integrity check',
  ) {
    super(`the stored ${kind} record at ${storageKey} ${problem}`);
    this.name = 'RecordIntegrityError';
  }
}

/** A storage key in printable form for logs: ASCII as is, other bytes as \xNN. */
export function printableKey(key: Uint8Array): string {
  let out = '';
  for (const byte of key)
    out +=
      byte >= 0x20 && byte < 0x7f && byte !== 0x5c
        ? String.fromCharCode(byte)
        : `\\x${byte.toString(16).padStart(2, '0')}`;
  return out;
}

/** "coffer-record/1" 0x00 kind 0x00, made once per kind. */
const AAD_HEADS = new Map<RecordKind, Buffer>();
function aadHead(kind: RecordKind): Buffer {
  let head = AAD_HEADS.get(kind);
  if (!head) {
    head = Buffer.from(`coffer-record/${FORMAT}\0${kind}\0`);
    AAD_HEADS.set(kind, head);
  }
  return head;
}

function aad(kind: RecordKind, storageKey: Uint8Array): Uint8Array {
  return Buffer.concat([aadHead(kind), storageKey]);
}

/** The record keys: one for sealing, one for MACs (both HKDF of the keyring's permanent root). */
export interface RecordKeys {
  readonly seal: Uint8Array;
  readonly mac: Uint8Array;
}

export class RecordSeal {
  private loaded: RecordKeys | undefined;

  /** `source` gives the record keys; they never change for a store, so it is asked once, on first use. */
  constructor(private readonly source: () => RecordKeys) {}

  private keys(): RecordKeys {
    this.loaded ??= this.source();
    return this.loaded;
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
   * For records that stay readable (intent copies, the key index, counters, …): `bytes` with a MAC
   * (MAC_BYTES) over the same associated data and the bytes, stored as   mac ‖ bytes.
   */
  authenticate(kind: RecordKind, storageKey: Uint8Array, bytes: Uint8Array): Buffer {
    return Buffer.concat([this.mac(kind, storageKey, bytes), bytes]);
  }

  /** The bytes of an authenticated record; throws RecordIntegrityError unless its MAC matches (constant time). */
  verified(kind: RecordKind, storageKey: Uint8Array, stored: Uint8Array): Buffer {
    const all = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
    const bytes = all.subarray(MAC_BYTES);
    if (
      all.length < MAC_BYTES ||
      !timingSafeEqual(all.subarray(0, MAC_BYTES), this.mac(kind, storageKey, bytes))
    ) {
      throw new RecordIntegrityError(kind, printableKey(storageKey));
    }
    return bytes;
  }

  private mac(kind: RecordKind, storageKey: Uint8Array, bytes: Uint8Array): Uint8Array {
    return sodium.crypto_generichash(
      MAC_BYTES,
      Buffer.concat([aadHead(kind), storageKey, bytes]),
      this.keys().mac,
    );
  }
}
