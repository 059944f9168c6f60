/** Messages between the supervisor and its workers (node:cluster IPC). */
/** A key a worker changed: the supervisor passes it on to the other workers, to wake their waits. */
export type KeyChanged = {
  readonly type: 'kv.changed';
  readonly namespace: string;
  readonly key: string;
};
export type WorkerMessage = { readonly type: 'ready'; readonly url: string } | KeyChanged;
export type SupervisorMessage = { readonly type: 'shutdown' } | KeyChanged;
