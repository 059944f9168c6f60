/** Messages between the supervisor and its workers (node:cluster IPC). */
/** A key a worker changed: the supervisor passes it on to the other workers, to wake their waits. */
export type KeyChanged = {
  readonly type: 'kv.changed';
  readonly namespace: string;
  readonly key: string;
};
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
  | MetricsRequest;
export type SupervisorMessage = { readonly type: 'shutdown' } | KeyChanged | MetricsAnswer;
