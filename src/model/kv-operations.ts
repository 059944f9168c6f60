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
