/**
 * A server process under the supervisor. It serves until the supervisor asks it to stop (or goes away),
 * then drains: no new connections, requests in flight finish, storage closes, exit 0.
 */
import type { Logger } from 'pino';
import { startCoffer } from '../app.js';
import type { CofferConfig } from '../config/schema.js';
import type { SupervisorMessage, WorkerMessage } from './messages.js';

export async function runWorker(config: CofferConfig, log: Logger): Promise<void> {
  const send = (message: WorkerMessage): void => void process.send?.(message);
  const heard = new Set<(ref: { namespace: string; key: string }) => void>();
  const app = await startCoffer(config, {
    log,
    prepare: false,
    peers: {
      publish: ({ namespace, key }) => send({ type: 'kv.changed', namespace, key }),
      subscribe: (listener) => heard.add(listener),
    },
  });
  send({ type: 'ready', url: app.url });

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: { message: (err as Error).message } }, 'worker failed to close cleanly');
        process.exit(1);
      },
    );
  };
  process.on('message', (message: SupervisorMessage) => {
    if (message?.type === 'shutdown') stop();
    else if (message?.type === 'kv.changed')
      for (const listener of heard) listener({ namespace: message.namespace, key: message.key });
  });
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  // Ctrl-C reaches the whole process group; the supervisor coordinates the shutdown.
  process.on('SIGINT', () => undefined);
}
