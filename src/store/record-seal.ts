/**
 * The seal of the store's own records (token records, the root token record, the audit chain registry): XChaCha20-Poly1305 under
 * the keyring's record key, with the record kind and its full storage key as associated data. So a
 * record whose bytes were changed, that was written by someone without the key (a token record with
 * `role: "admin"` put in by hand), or that was copied or swapped from another key fails to open, and is
 * never used. What it cannot tell is an older valid copy of the same record put back (a replay): see
 * SECURITY.md, "Storage".
 *
 *   stored bytes = msgpack { f: 1, n: nonce, c: ciphertext }     plaintext = msgpack of the record
 *   AAD          = "coffer-record/1" 0x00 kind 0x00 storage key bytes
 */
import { Packr } from 'msgpackr';
import { aeadOpen, aeadSeal, NONCE_BYTES, SealedDataError } from '../crypto/aead.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const FORMAT = 1;

export type RecordKind = 'token' | 'root-token' | 'audit-chain';

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

function aad(kind: RecordKind, storageKey: Uint8Array): Uint8Array {
  return Buffer.concat([Buffer.from(`coffer-record/${FORMAT}\0${kind}\0`), storageKey]);
}

/** The seal under `holder`'s current keyring (a KeyringHolder; the record key never changes for a store). */
export function recordSealOf(holder: { current(): { recordKey(): Uint8Array } }): RecordSeal {
  return new RecordSeal(() => holder.current().recordKey());
}

export class RecordSeal {
  /** `key` gives the current record key (it never changes for a store; read when used). */
  constructor(private readonly key: () => Uint8Array) {}

  seal(kind: RecordKind, storageKey: Uint8Array, record: unknown): Buffer {
    const sealed = aeadSeal(this.key(), packr.pack(record), aad(kind, storageKey));
    return packr.pack({ f: FORMAT, n: sealed.nonce, c: sealed.ciphertext });
  }

  /** The record stored at `storageKey`; throws RecordIntegrityError unless it opens as a `kind` record of that key. */
  open<T>(kind: RecordKind, storageKey: Uint8Array, bytes: Uint8Array): T {
    try {
      const stored = packr.unpack(bytes) as { f?: unknown; n?: unknown; c?: unknown } | null;
      if (stored?.f !== FORMAT || !(stored.n instanceof Uint8Array) || stored.n.length !== NONCE_BYTES || !(stored.c instanceof Uint8Array)) {
        throw new SealedDataError();
      }
      return packr.unpack(aeadOpen(this.key(), { nonce: stored.n, ciphertext: stored.c }, aad(kind, storageKey))) as T;
    } catch {
      throw new RecordIntegrityError(kind, printableKey(storageKey));
    }
  }
}

/** The plain msgpack of records as stores of format 1 held them (read only by the upgrade). */
export function unpackPlain<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
