/** Messages between the supervisor and its workers (node:cluster IPC). */
/** A key a worker changed: the supervisor passes it on to the other workers, to wake their waits. */
export type KeyChanged = {
  readonly type: 'kv.changed';
  readonly namespace: string;
  readonly key: string;
};
/**
 * A worker's event log moved on without a key changing (a token revoked, the keyring rotated): passed on to
 * the workers holding a wait for every change (event streams, webhooks' deliveries).
 */
export type EventsMoved = { readonly type: 'kv.moved' };
/**
 * A worker now holds waits at `where` (kv/key-changes.ts `wakesOf`), or no longer: the supervisor relays a
 * change only to the workers that hold a wait it wakes, and acknowledges each such message (`id`) once it
 * has taken it, so that a worker reads only after its interest counts.
 */
export type KeyInterest = {
  readonly type: 'kv.interest';
  readonly where: string;
  readonly held: boolean;
  readonly id: number;
};
export type KeyInterestTaken = { readonly type: 'kv.interest.taken'; readonly id: number };
/**
 * Whether another worker holds a wait now (server/change-senders.ts): a worker sends its changes to the
 * supervisor only while one does. Every notice is acknowledged (`id`), so that the supervisor answers a
 * worker's interest only once every other worker knows to send.
 */
export type SiblingsWait = {
  readonly type: 'kv.siblings';
  readonly waiting: boolean;
  readonly id: number;
};
export type SiblingsWaitTaken = { readonly type: 'kv.siblings.taken'; readonly id: number };
/** The server's metrics, asked for by a worker (for GET /v1/sys/metrics) and answered by the supervisor. */
export type MetricsRequest = { readonly type: 'metrics.request'; readonly id: number };
export type MetricsAnswer = {
  readonly type: 'metrics.answer';
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
};
export type WorkerMessage =
  | { readonly type: 'ready'; readonly url: string }
  | KeyChanged
  | EventsMoved
  | KeyInterest
  | SiblingsWaitTaken
  | MetricsRequest;
export type SupervisorMessage =
  | { readonly type: 'shutdown' }
  | KeyChanged
  | EventsMoved
  | KeyInterestTaken
  | SiblingsWait
  | MetricsAnswer;
