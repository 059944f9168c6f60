/**
 * Every kind of record the store keeps, in one table: how a client is told one failed its check (in words,
 * never which record or its content), and for the store's own records where they live, how they are
 * protected (sealed, or MACed) and how format 1 kept them plain (the upgrade's decoder). A new kind is a
 * line here, its key in layout.ts, and the record store that seals and opens it.
 */
import type { KeyRange } from '../storage/backend.js';
import {
  type Format1Decode,
  fourBytes,
  intentLine,
  jsonWith,
  msgpackBytesWith,
  msgpackWith,
  NOT_IN_FORMAT_1,
  plainMeta,
} from './format-1.js';
import {
  AUDIT_CHAINS_RANGE,
  AUDIT_COUNT_KEY,
  AUDIT_LINES_RANGE,
  CONSOLE_SESSIONS_RANGE,
  COUNTERS_RANGE,
  EVENT_POSITION_KEY,
  EVENTS_RANGE,
  GENERATION_KEY,
  INTENT_JOURNAL_RANGE,
  METAS_RANGE,
  POLICIES_KEY,
  REWRAP_STATE_KEY,
  ROOT_TOKEN_KEY,
  TOKENS_RANGE,
  TRASH_RANGE,
  WEBHOOK_CURSORS_RANGE,
  WEBHOOK_LEASE_KEY,
  WEBHOOKS_RANGE,
} from './layout.js';

/** The range holding the one key `key`. */
function only(key: Buffer): KeyRange {
  return { start: key, end: Buffer.concat([key, Buffer.from([0])]) };
}

/** One of the store's own records: where, how protected, and its plain form in format 1. */
interface Stored {
  readonly range: KeyRange;
  readonly protection: 'seal' | 'mac';
  readonly format1: Format1Decode;
}

const TABLE = {
  'root-token': {
    words: 'root token record',
    stored: { range: only(ROOT_TOKEN_KEY), protection: 'seal', format1: msgpackWith('hash') },
  },
  token: {
    words: 'token record',
    stored: { range: TOKENS_RANGE, protection: 'seal', format1: msgpackWith('hash') },
  },
  'audit-chain': {
    words: 'audit chain record',
    stored: { range: AUDIT_CHAINS_RANGE, protection: 'seal', format1: jsonWith('chain') },
  },
  'intent-copy': {
    words: 'intent copy',
    stored: { range: INTENT_JOURNAL_RANGE, protection: 'mac', format1: intentLine },
  },
  // Format 1 had no copy of the audit lines in the store.
  'audit-lines': {
    words: 'audit log copy',
    stored: { range: AUDIT_LINES_RANGE, protection: 'seal', format1: NOT_IN_FORMAT_1 },
  },
  'kv-meta': {
    words: 'key index',
    stored: { range: METAS_RANGE, protection: 'mac', format1: plainMeta },
  },
  'kv-counter': {
    words: 'version counter',
    stored: { range: COUNTERS_RANGE, protection: 'mac', format1: fourBytes },
  },
  // Format 1 deleted a key's versions with it: it had no trash.
  'kv-trash': {
    words: 'deleted key record',
    stored: { range: TRASH_RANGE, protection: 'mac', format1: NOT_IN_FORMAT_1 },
  },
  'keyring-generation': {
    words: 'keyring generation',
    stored: { range: only(GENERATION_KEY), protection: 'mac', format1: fourBytes },
  },
  'rewrap-state': {
    words: 'rewrap state',
    stored: {
      range: only(REWRAP_STATE_KEY),
      protection: 'mac',
      format1: msgpackBytesWith('owner'),
    },
  },
  // Format 1 did not count audit chains, had no runtime roles and no web console.
  'audit-count': {
    words: 'audit chain count',
    stored: { range: only(AUDIT_COUNT_KEY), protection: 'mac', format1: NOT_IN_FORMAT_1 },
  },
  policies: {
    words: 'roles record',
    stored: { range: only(POLICIES_KEY), protection: 'seal', format1: NOT_IN_FORMAT_1 },
  },
  'console-session': {
    words: 'console session',
    stored: { range: CONSOLE_SESSIONS_RANGE, protection: 'seal', format1: NOT_IN_FORMAT_1 },
  },
  // Format 1 had no event log.
  event: {
    words: 'change event',
    stored: { range: EVENTS_RANGE, protection: 'mac', format1: NOT_IN_FORMAT_1 },
  },
  'event-position': {
    words: 'event log position',
    stored: { range: only(EVENT_POSITION_KEY), protection: 'mac', format1: NOT_IN_FORMAT_1 },
  },
  // Format 1 had no webhooks.
  webhook: {
    words: 'webhook record',
    stored: { range: WEBHOOKS_RANGE, protection: 'seal', format1: NOT_IN_FORMAT_1 },
  },
  'webhook-cursor': {
    words: 'webhook delivery cursor',
    stored: { range: WEBHOOK_CURSORS_RANGE, protection: 'seal', format1: NOT_IN_FORMAT_1 },
  },
  'webhook-lease': {
    words: 'webhook delivery lease',
    stored: { range: only(WEBHOOK_LEASE_KEY), protection: 'seal', format1: NOT_IN_FORMAT_1 },
  },
  // Not the store's own: the key's versions (sealed by envelope, kv-version-writes.ts) and the keyring
  // (wrapped by the master key).
  'kv-version': { words: 'value' },
  keyring: { words: 'keyring' },
} as const satisfies Record<string, { readonly words: string; readonly stored?: Stored }>;

export type RecordKind = keyof typeof TABLE;

/** The store's own kinds of record, each with where it lives and how it is protected. */
export const RECORD_KINDS: readonly (Stored & { readonly kind: RecordKind })[] = Object.entries(
  TABLE,
).flatMap(([kind, entry]) =>
  'stored' in entry ? [{ kind: kind as RecordKind, ...(entry.stored as Stored) }] : [],
);

/** What a client is told failed its check. */
export function recordInWords(kind: RecordKind): string {
  return TABLE[kind].words;
}
