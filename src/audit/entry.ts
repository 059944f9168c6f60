/**
 * Audit entries and the chain that links them. Each entry is one JSON line whose first fields are
 *   {"seq":N,"chain":"<id>","ts":"<ISO time>","prev":"<link>","kind":…}
 *
 * Format 2 (chains started since 2026-11-24; the store's record of the chain says so):
 *   prev     HMAC-SHA256 under the link key (audit/chain-keys.ts) of the previous line exactly as written,
 *            64 zeros for the first: deleting, inserting, reordering or editing a line breaks the `prev` of
 *            the line after it, and nobody without the key can compute a `prev` that mends it.
 *   digest   a running SHA-256 over the chain's lines, d(n) = SHA-256(d(n-1) ‖ line n), d(0) = 64 zeros:
 *            needs no key to recompute.
 *   a checkpoint line carries `digest` (d of the lines before it) and `sig`, an Ed25519 signature over
 *            ["coffer-audit-checkpoint/2", chain, seq, ts, prev, digest]: an auditor with the public key
 *            checks that every line up to it is exactly as signed.
 * Format 1 (earlier chains): `prev` is the plain SHA-256 of the previous line, and a checkpoint carries
 *   `mac`, HMAC-SHA256 under the legacy key over the chain id, its seq and its prev.
 */
import {
  createHmac,
  createPrivateKey,
  createSecretKey,
  hash,
  type KeyObject,
  sign,
  timingSafeEqual,
} from 'node:crypto';
import sodium from 'libsodium-wrappers';

export const GENESIS = '0'.repeat(64);

/**
 * What one request or operator event records. Never a value, a token or a request body, and never a field
 * of the line's own head (seq, chain, ts, prev): entryLine would write it twice.
 */
export interface AuditFields {
  readonly kind: 'request' | 'intent' | 'event' | 'checkpoint';
  readonly seq?: never;
  readonly chain?: never;
  readonly ts?: never;
  readonly prev?: never;
  readonly [field: string]: unknown;
}

export interface ChainPosition {
  readonly seq: number;
  readonly prev: string;
}

let lastTime = NaN;
let lastIso = '';

/** The ISO form of `ms`, kept for the next entry: most entries of a batch share their millisecond. */
export function isoTime(ms: number): string {
  if (ms !== lastTime) {
    lastTime = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/** The line for `fields` at `position` (no trailing newline). */
export function entryLine(
  chain: string,
  position: ChainPosition,
  ts: number,
  fields: AuditFields,
): string {
  // The same text as JSON.stringify({seq, chain, ts, prev, ...fields}) (fields never hold those four names),
  // without copying `fields` into a new object on every request.
  const head = `{"seq":${position.seq},"chain":${JSON.stringify(chain)},"ts":"${isoTime(ts)}","prev":"${position.prev}",`;
  return head + JSON.stringify(fields).slice(1);
}

/** Link keys imported once: an HMAC over a raw key imports it again on every line. */
const linkKeys = new WeakMap<Uint8Array, KeyObject>();

/** Format 2: the `prev` of the line after `line`. */
export function linkOf(key: Uint8Array, line: string): string {
  let imported = linkKeys.get(key);
  if (imported === undefined) {
    imported = createSecretKey(key);
    linkKeys.set(key, imported);
  }
  return createHmac('sha256', imported).update(line).digest('hex');
}

/** The running digest after `line`, from `digest` (the digest before it). */
export function digestAfter(digest: string, line: string): string {
  return hash('sha256', `${digest}${line}`, 'hex');
}

function checkpointMessage(
  chain: string,
  seq: number,
  ts: string,
  prev: string,
  digest: string,
): Buffer {
  return Buffer.from(JSON.stringify(['coffer-audit-checkpoint/2', chain, seq, ts, prev, digest]));
}

/** Signing keys imported once (node's Ed25519 signs in about ¾ of libsodium's time here; the same bytes). */
const signingKeys = new WeakMap<Uint8Array, KeyObject>();

/** PKCS#8's DER prefix of an Ed25519 private key, before its 32-byte seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** `signing` is libsodium's 64-byte secret key: its seed, then its public key. */
function signingKeyOf(signing: Uint8Array): KeyObject {
  let imported = signingKeys.get(signing);
  if (imported === undefined) {
    const der = Buffer.concat([ED25519_PKCS8_PREFIX, signing.subarray(0, 32)]);
    imported = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    der.fill(0);
    signingKeys.set(signing, imported);
  }
  return imported;
}

/** The signature of a format-2 checkpoint (hex). */
export function signCheckpoint(
  signing: Uint8Array,
  chain: string,
  seq: number,
  ts: string,
  prev: string,
  digest: string,
): string {
  return sign(
    null,
    checkpointMessage(chain, seq, ts, prev, digest),
    signingKeyOf(signing),
  ).toString('hex');
}

export function signatureMatches(
  publicKey: Uint8Array,
  checkpoint: { chain: string; seq: number; ts: string; prev: string; digest: string },
  sig: unknown,
): boolean {
  if (typeof sig !== 'string' || !/^[0-9a-f]{128}$/.test(sig)) return false;
  const { chain, seq, ts, prev, digest } = checkpoint;
  return sodium.crypto_sign_verify_detached(
    Buffer.from(sig, 'hex'),
    checkpointMessage(chain, seq, ts, prev, digest),
    publicKey,
  );
}

/** Format 1: the `prev` of the line after `line`. */
export function lineHash(line: string): string {
  return hash('sha256', line, 'hex');
}

/** Format 1: a checkpoint's MAC. */
export function checkpointMac(key: Uint8Array, chain: string, seq: number, prev: string): string {
  return createHmac('sha256', key)
    .update(`coffer-audit-checkpoint\n${chain}\n${seq}\n${prev}`)
    .digest('hex');
}

export function macMatches(
  key: Uint8Array,
  chain: string,
  seq: number,
  prev: string,
  mac: unknown,
): boolean {
  if (typeof mac !== 'string' || !/^[0-9a-f]{64}$/.test(mac)) return false;
  return timingSafeEqual(
    Buffer.from(checkpointMac(key, chain, seq, prev), 'hex'),
    Buffer.from(mac, 'hex'),
  );
}
