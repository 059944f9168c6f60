/**
 * Audit entries and the chain that links them. Each entry is one JSON line whose first fields are
 *   {"seq":N,"chain":"<id>","ts":"<ISO time>","prev":"<SHA-256 hex of the previous line>","kind":…}
 * so deleting, inserting, reordering or editing a line breaks the `prev` of the line after it. Every
 * checkpoint line carries `mac`: HMAC-SHA256, under a key derived from the keyring, over the chain id, its
 * own seq and its prev; a writer without the key cannot make a rewritten history end in a valid checkpoint.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';

export const GENESIS = '0'.repeat(64);

/** What one request or operator event records. Never a value, a token or a request body. */
export interface AuditFields {
  readonly kind: 'request' | 'intent' | 'event' | 'checkpoint';
  readonly [field: string]: unknown;
}

export interface ChainPosition {
  readonly seq: number;
  readonly prev: string;
}

let lastTime = NaN;
let lastIso = '';

/** The ISO form of `ms`, kept for the next entry: most entries of a batch share their millisecond. */
function isoTime(ms: number): string {
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

export function lineHash(line: string): string {
  return hash('sha256', line, 'hex');
}

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
