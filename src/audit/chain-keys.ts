/**
 * The keys of the audit chains, all derived from the keyring's permanent root (crypto/keyring.ts), which
 * only the master key opens:
 *
 *   link      HMAC-SHA256 key of each line's `prev`: nobody without it can make a line follow another
 *   signing   Ed25519 key of the checkpoints; its public key is published (GET /v1/sys/audit/public-key,
 *             and by `coffer audit verify`), so an auditor checks checkpoints with no secret at all
 *   legacy    the checkpoint MAC key of chains written before 2026-11-24 (format 1), still verified
 *
 * An auditor holding only the public key has `publicKey` alone: the checkpoints' signatures and the
 * lines they cover are checked, the links are not.
 */
import { createHash } from 'node:crypto';
import sodium from 'libsodium-wrappers';
import type { Keyring } from '../crypto/keyring.js';

export interface ChainKeys {
  readonly publicKey: Uint8Array;
  /** Absent for an auditor without the master key. */
  readonly link?: Uint8Array;
  /** Absent when only verifying. */
  readonly signing?: Uint8Array;
  readonly legacy?: Uint8Array;
}

/** Every key of the chains, from the keyring (to write, or to verify everything). */
export function chainKeysOf(keyring: Keyring): ChainKeys {
  const pair = sodium.crypto_sign_seed_keypair(keyring.auditSigningSeed());
  return {
    publicKey: pair.publicKey,
    link: keyring.auditLinkKey(),
    signing: pair.privateKey,
    legacy: keyring.auditKey(),
  };
}

/** What an auditor with only the published public key holds. */
export function publicChainKeys(publicKey: Uint8Array): ChainKeys {
  return { publicKey };
}

/** The public key as published: 64 hex digits. */
export function publicKeyText(keys: Pick<ChainKeys, 'publicKey'>): string {
  return Buffer.from(keys.publicKey).toString('hex');
}

/** A short fingerprint of the public key, to compare by eye: the first 16 hex digits of its SHA-256. */
export function publicKeyFingerprint(keys: Pick<ChainKeys, 'publicKey'>): string {
  return createHash('sha256').update(keys.publicKey).digest('hex').slice(0, 16);
}

/** The public key in `text` (64 hex digits), or null. */
export function parsePublicKey(text: string): Uint8Array | null {
  return /^[0-9a-f]{64}$/i.test(text.trim()) ? Buffer.from(text.trim(), 'hex') : null;
}
