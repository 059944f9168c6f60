/** Messages between the supervisor and its workers (node:cluster IPC). */
export type WorkerMessage = { readonly type: 'ready'; readonly url: string };
export type SupervisorMessage = { readonly type: 'shutdown' };
