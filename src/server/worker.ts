/**
 * A server process under the supervisor. It serves until the supervisor asks it to stop (or goes away),
 * then drains: no new connections, requests in flight finish, storage closes, exit 0. Asked to stop while
 * it is still starting (a replacement worker as the server shuts down), it stops as soon as it has started.
 */
import type { Logger } from 'pino';
import { type KeyRef, type RunningCoffer, startCoffer } from '../app.js';
import type { CofferConfig } from '../config/schema.js';
import type { MetricsAnswer, SupervisorMessage, WorkerMessage } from './messages.js';
import { workerMetrics } from './metrics-cluster.js';

export async function runWorker(config: CofferConfig, log: Logger): Promise<void> {
  // A supervisor gone away ends this worker through 'disconnect'; a message that cannot reach it is no news.
  const send = (message: WorkerMessage): void =>
    void process.send?.(message, undefined, undefined, () => undefined);
  const heard = new Set<(ref: KeyRef | undefined) => void>();
  const metricsAnswers = new Set<(answer: MetricsAnswer) => void>();
  /** Interests told to the supervisor, by id, until it has taken them (server/change-relay.ts). */
  const interests = new Map<number, () => void>();
  let lastInterest = 0;
  /** Whether another worker holds a wait: only then are this worker's changes sent (server/change-senders.ts). */
  let siblingsWait = true;
  const interest = (where: string, held: boolean): Promise<void> =>
    new Promise((resolve) => {
      const id = ++lastInterest;
      interests.set(id, resolve);
      send({ type: 'kv.interest', where, held, id });
    });

  let app: RunningCoffer | undefined;
  let stopping = false;
  const close = (running: RunningCoffer): void => {
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: { message: (err as Error).message } }, 'worker failed to close cleanly');
        process.exit(1);
      },
    );
  };
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    if (app) close(app);
  };
  // Listening before starting, so that a shutdown asked for during the start is not lost.
  process.on('message', (message: SupervisorMessage) => {
    if (message?.type === 'shutdown') stop();
    else if (message?.type === 'kv.changed')
      for (const listener of heard) listener({ namespace: message.namespace, key: message.key });
    else if (message?.type === 'kv.moved') for (const listener of heard) listener(undefined);
    else if (message?.type === 'kv.siblings') {
      siblingsWait = message.waiting;
      send({ type: 'kv.siblings.taken', id: message.id });
    } else if (message?.type === 'kv.interest.taken') {
      interests.get(message.id)?.();
      interests.delete(message.id);
    } else if (message?.type === 'metrics.answer')
      for (const listener of metricsAnswers) listener(message);
  });
  process.on('disconnect', () => {
    // No supervisor, no siblings: nothing is relayed any more, and no wait need wait for it.
    for (const taken of interests.values()) taken();
    interests.clear();
    stop();
  });
  process.on('SIGTERM', stop);
  // Ctrl-C reaches the whole process group; the supervisor coordinates the shutdown.
  process.on('SIGINT', () => undefined);

  app = await startCoffer(config, {
    log,
    prepare: false,
    peers: {
      publish: (ref) => {
        if (!siblingsWait) return false;
        send(
          ref
            ? { type: 'kv.changed', namespace: ref.namespace, key: ref.key }
            : { type: 'kv.moved' },
        );
        return true;
      },
      subscribe: (listener) => heard.add(listener),
      interest,
    },
    serverMetrics: workerMetrics(send, metricsAnswers),
  });
  if (stopping) close(app);
  else send({ type: 'ready', url: app.url });
}
