/** What a change to a key did, as the event log (store/event-log.ts) records it and filters name it. */
export const KV_OPERATIONS = [
  'write',
  'delete',
  'undelete',
  'destroy',
  'metadata',
  'versions',
] as const;

export type KvOperation = (typeof KV_OPERATIONS)[number];

/**
 * What a stream's or a webhook's `kinds` may name: a key's operations, and the other changes the event log
 * records, which are sent only to one that names them.
 */
export const EVENT_KINDS = [...KV_OPERATIONS, 'token.revoke', 'keyring.rotate'] as const;

export type EventKindName = (typeof EVENT_KINDS)[number];
