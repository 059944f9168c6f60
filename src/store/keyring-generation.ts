/**
 * The keyring generation (`Skeyring-generation`): bumped by every change of the keyring, MACed under the
 * record key (kind `keyring-generation`), read by every write's transaction. A process holds the keyring
 * of one generation, and a write sealed under a stale keyring is refused (StaleKeyringError). Generations
 * only grow: a number below one a process has seen is an older record put back (store/keyring-store.ts).
 */
import type { Keyring } from '../crypto/keyring.js';
import { packUint32, unpackUint32 } from '../storage/uint32.js';
import { GENERATION_KEY } from './layout.js';
import { printableKey, RecordIntegrityError, RecordSeal } from './record-seal.js';

export { GENERATION_KEY };

/** A generation as a process holds it: its number and its stored bytes, for a quick compare in transactions. */
export interface GenerationStamp {
  readonly generation: number;
  readonly bytes: Uint8Array;
}

/** Thrown inside a write transaction that found a newer keyring generation than the one it sealed with. */
export class StaleKeyringError extends Error {
  constructor() {
    super('the keyring changed since this process loaded it');
    this.name = 'StaleKeyringError';
  }
}

/** The generation record for `generation`, MACed under `keyring`'s record key. */
export function packGeneration(keyring: Keyring, generation: number): Buffer {
  return new RecordSeal(() => keyring.recordKeys()).authenticate(
    'keyring-generation',
    GENERATION_KEY,
    packUint32(generation),
  );
}

/**
 * The generation in the stored record `bytes`, read with `keyring` (for its store format) and `seal`;
 * throws RecordIntegrityError unless its MAC matches, or when it is missing (it is written with the
 * keyring, and never deleted). Stores of format 1 kept it as a plain 4-byte number.
 */
export function generationIn(
  bytes: Uint8Array | undefined,
  keyring: Keyring,
  seal: RecordSeal,
): number {
  if (bytes === undefined)
    throw new RecordIntegrityError(
      'keyring-generation',
      printableKey(GENERATION_KEY),
      'is missing',
    );
  if (keyring.storeFormat < 2 && bytes.byteLength === 4) return unpackUint32(bytes);
  return unpackUint32(seal.verified('keyring-generation', GENERATION_KEY, bytes));
}

/** The error for a generation record older than one already seen: someone put an older copy back. */
export function olderGeneration(found: number, seen: number): RecordIntegrityError {
  return new RecordIntegrityError(
    'keyring-generation',
    printableKey(GENERATION_KEY),
    `is older than one already seen (generation ${found} < ${seen}): an older copy was put back`,
  );
}
