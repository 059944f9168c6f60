/**
 * Which storage key holds what. All keys are ASCII strings turned into bytes; names cannot contain the
 * bytes 0x00..0x02 (kv/names.ts), which serve as separators so that byte order is code-point order:
 *
 *   M <ns> 0x00 <key>                 key meta: latest version, latest type, first live version
 *   C <ns> 0x00 <key>                 a deleted key's last version number (while a key exists, its meta's
 *                                     latest version is its counter), so numbering goes on after a delete
 *   D <ns> 0x00 <key>                 a deleted key's index as it was, and when it was deleted: the key is in
 *                                     the trash, its versions kept until it is destroyed or written again
 *   V <ns> 0x00 <key> 0x00 <u32 BE>   one version record
 *   T <id>                            one token record
 *   U <sha256 of a session id, hex>   one web console session (auth/console-sessions.ts)
 *   S <name>                          system records (root token hash, wrapped keyring, runtime roles)
 *   A <chain id>                      one audit chain: its files and last checkpoint (audit/registry.ts)
 *   J <chain id> 0x00 <u32 BE seq>    an intent entry's copy, committed with its change (audit/intent-journal.ts)
 *   L <chain id> 0x00 <u32 BE seq>    a run of an audit chain's lines from seq on, on shared storage
 *                                     (audit/database-copy.ts)
 *   E <u64 BE position>               one change event, at its position in the event log (store/event-log.ts)
 *   E 0xFF                            the event log's last position given: after every event (a position's
 *                                     first byte is 0x00), so it shares the newest events' page
 *   H <name>                          one webhook: its destination, filters and signing secret
 *   I <name>                          one webhook's delivery cursor (store/webhook-records.ts)
 *
 * where <ns> is the namespace with '/' written as 0x01. So the keys directly in `ns` lie in
 * [M ns 0x00, M ns 0x01), everything beneath it in [M ns 0x01, M ns 0x02), and skipping past a child
 * namespace `c` means seeking to M ns 0x01 c 0x02.
 */
import type { KeyRange } from '../storage/backend.js';
import { packUint32, unpackUint32 } from '../storage/uint32.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');
const nsPart = (ns: string): string => ns.replaceAll('/', '\x01');

export function metaKey(ns: string, key: string): Buffer {
  return bytes(`M${nsPart(ns)}\0${key}`);
}

export function counterKey(ns: string, key: string): Buffer {
  return bytes(`C${nsPart(ns)}\0${key}`);
}

export function trashKey(ns: string, key: string): Buffer {
  return bytes(`D${nsPart(ns)}\0${key}`);
}

/** The deleted keys directly in `ns`, in order, from just after `after`. */
export function trashRange(ns: string, after?: string): KeyRange {
  const base = `D${nsPart(ns)}`;
  return {
    start: bytes(after === undefined ? `${base}\0` : `${base}\0${after}\0`),
    end: bytes(`${base}\x01`),
  };
}

/** Every deleted key's record. */
export const TRASH_RANGE: KeyRange = { start: bytes('D'), end: bytes('E') };

export function versionKey(ns: string, key: string, version: number): Buffer {
  const out = Buffer.alloc(1 + Buffer.byteLength(ns) + 1 + key.length + 1 + 4);
  const prefix = `V${nsPart(ns)}\0${key}\0`;
  out.write(prefix, 'latin1');
  out.writeUInt32BE(version, prefix.length);
  return out;
}

/** Every version record of one key, oldest first. */
export function versionRange(ns: string, key: string): KeyRange {
  return { start: bytes(`V${nsPart(ns)}\0${key}\0`), end: bytes(`V${nsPart(ns)}\0${key}\x01`) };
}

/** Every version record of every key. */
export const VERSIONS_RANGE: KeyRange = { start: bytes('V'), end: bytes('W') };

/** Every key's meta, and every key's version counter. */
export const METAS_RANGE: KeyRange = { start: bytes('M'), end: bytes('N') };
export const COUNTERS_RANGE: KeyRange = { start: bytes('C'), end: bytes('D') };

/** The namespace, key and version named by a version key. */
export function parseVersionKey(storageKey: Uint8Array): {
  namespace: string;
  key: string;
  version: number;
} {
  const buf = Buffer.from(storageKey.buffer, storageKey.byteOffset, storageKey.byteLength);
  const text = buf.toString('latin1', 1, buf.length - 5);
  const sep = text.indexOf('\0');
  return {
    namespace: text.slice(0, sep).replaceAll('\x01', '/'),
    key: text.slice(sep + 1),
    version: buf.readUInt32BE(buf.length - 4),
  };
}

export function versionOf(storageKey: Uint8Array): number {
  return Buffer.from(storageKey.buffer, storageKey.byteOffset, storageKey.byteLength).readUInt32BE(
    storageKey.byteLength - 4,
  );
}

/**
 * Past every name that starts with a prefix: names are of [A-Za-z0-9._-] (model/names.ts), all below 0x7f.
 */
const PAST_PREFIX = '\x7f';

/**
 * Meta entries of the keys directly in `ns` whose names start with `prefix` (every key when it is ''), from
 * just after the key named `after`.
 */
export function keysRange(ns: string, after?: string, prefix = ''): KeyRange {
  const base = `M${nsPart(ns)}`;
  return {
    start: bytes(after === undefined ? `${base}\0${prefix}` : `${base}\0${after}\0`),
    end: bytes(prefix === '' ? `${base}\x01` : `${base}\0${prefix}${PAST_PREFIX}`),
  };
}

/**
 * Meta entries beneath `ns` (in child namespaces whose names start with `prefix`), from just past the child
 * named `after`. Beneath the root (`ns` = '') lies every key: its children are the top-level namespaces.
 */
export function descendantsRange(ns: string, after?: string, prefix = ''): KeyRange {
  const base = ns === '' ? 'M' : `M${nsPart(ns)}\x01`;
  return {
    start: bytes(after === undefined ? `${base}${prefix}` : `${base}${after}\x02`),
    end: bytes(
      prefix !== '' ? `${base}${prefix}${PAST_PREFIX}` : ns === '' ? 'N' : `M${nsPart(ns)}\x02`,
    ),
  };
}

/** Meta entries in `ns` and everywhere beneath it. */
export function subtreeRange(ns: string): KeyRange {
  return { start: bytes(`M${nsPart(ns)}\0`), end: bytes(`M${nsPart(ns)}\x02`) };
}

/** The namespace and key named by a meta key. */
export function parseMetaKey(storageKey: Uint8Array): { namespace: string; key: string } {
  const text = Buffer.from(
    storageKey.buffer,
    storageKey.byteOffset,
    storageKey.byteLength,
  ).toString('latin1');
  const sep = text.indexOf('\0');
  return { namespace: text.slice(1, sep).replaceAll('\x01', '/'), key: text.slice(sep + 1) };
}

export function tokenKey(id: string): Buffer {
  return bytes(`T${id}`);
}

export const TOKENS_RANGE: KeyRange = { start: bytes('T'), end: bytes('U') };

/** A web console session, by the SHA-256 of its cookie's value (hex): the cookie itself is never stored. */
export function consoleSessionKey(idHash: string): Buffer {
  return bytes(`U${idHash}`);
}

export const CONSOLE_SESSIONS_RANGE: KeyRange = { start: bytes('U'), end: bytes('V') };

export function systemKey(
  name:
    | 'root-token'
    | 'keyring'
    | 'keyring-generation'
    | 'rewrap'
    | 'audit-chains'
    | 'policies'
    | 'webhook-lease',
): Buffer {
  return bytes(`S${name}`);
}

/** The root token's record (auth/root-token.ts). */
export const ROOT_TOKEN_KEY = systemKey('root-token');
export const GENERATION_KEY = systemKey('keyring-generation');
export const REWRAP_STATE_KEY = systemKey('rewrap');
/** The runtime roles and login roles (store/policy-records.ts). */
export const POLICIES_KEY = systemKey('policies');
/** How many audit chains the store has started: each chain's record holds its ordinal (1, 2, …). */
export const AUDIT_COUNT_KEY = systemKey('audit-chains');

export function auditChainKey(chain: string): Buffer {
  return bytes(`A${chain}`);
}

export const AUDIT_CHAINS_RANGE: KeyRange = { start: bytes('A'), end: bytes('B') };

export function intentJournalKey(chain: string, seq: number): Buffer {
  return Buffer.concat([bytes(`J${chain}\0`), packUint32(seq)]);
}

export function parseIntentJournalKey(storageKey: Uint8Array): { chain: string; seq: number } {
  const key = Buffer.from(storageKey.buffer, storageKey.byteOffset, storageKey.byteLength);
  return {
    chain: key.toString('latin1', 1, key.length - 5),
    seq: unpackUint32(key.subarray(key.length - 4)),
  };
}

export const INTENT_JOURNAL_RANGE: KeyRange = { start: bytes('J'), end: bytes('K') };

export function auditLinesKey(chain: string, seq: number): Buffer {
  return Buffer.concat([bytes(`L${chain}\0`), packUint32(seq)]);
}

/** The chain and first seq of an audit lines record: the same form as an intent copy's key. */
export const parseAuditLinesKey = parseIntentJournalKey;

export const AUDIT_LINES_RANGE: KeyRange = { start: bytes('L'), end: bytes('M') };

/** One chain's audit lines records. */
export function auditLinesRange(chain: string): KeyRange {
  return { start: bytes(`L${chain}\0`), end: bytes(`L${chain}\u0001`) };
}

/** The event log's last position given (store/event-log.ts): each change's plan reads and writes it. */
export const EVENT_POSITION_KEY = Buffer.from([0x45, 0xff]);

/** The event at `position` (1, 2, …): its number big-endian, so that key order is position order. */
export function eventKey(position: number): Buffer {
  const out = Buffer.alloc(9);
  out.write('E', 'latin1');
  out.writeBigUInt64BE(BigInt(position), 1);
  return out;
}

/** The position of the event at `storageKey`. */
export function positionOf(storageKey: Uint8Array): number {
  return Number(Buffer.from(storageKey).readBigUInt64BE(1));
}

/** Every event (the position record, E 0xFF, is past them). */
export const EVENTS_RANGE: KeyRange = { start: bytes('E'), end: EVENT_POSITION_KEY };

/** The events from `position` on. */
export function eventsFrom(position: number): KeyRange {
  return { start: eventKey(position), end: EVENTS_RANGE.end };
}

/** One webhook's definition (store/webhook-records.ts). */
export function webhookKey(name: string): Buffer {
  return bytes(`H${name}`);
}

export const WEBHOOKS_RANGE: KeyRange = { start: bytes('H'), end: bytes('I') };

/** One webhook's delivery cursor: the last event position it has delivered. */
export function webhookCursorKey(name: string): Buffer {
  return bytes(`I${name}`);
}

export const WEBHOOK_CURSORS_RANGE: KeyRange = { start: bytes('I'), end: bytes('J') };

/** Which server process delivers the webhooks, and until when (store/webhook-records.ts). */
export const WEBHOOK_LEASE_KEY = systemKey('webhook-lease');
