/**
 * The supervisor (the cluster primary): prepares the store once (master key, keyring, root token), then
 * runs COFFER_WORKERS server processes that share the listening socket and the LMDB environment. A worker
 * that dies is replaced (with a growing delay if workers keep dying young). SIGTERM or SIGINT drains every
 * worker (requests in flight finish) and then exits 0. With COFFER_SNAPSHOT_DIR and COFFER_SNAPSHOT_EVERY
 * it also takes the scheduled snapshots (operator/scheduled-snapshots.ts); a shutdown waits for one in
 * progress.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { type KeyRef, prepareStore } from '../app.js';
import type { CofferConfig } from '../config/schema.js';
import { ensureDirectory } from '../directories.js';
import { checkListenable, readTls } from '../http/http-server.js';
import { parseDuration } from '../operator/auto-rotate.js';
import {
  type ScheduledSnapshots,
  startScheduledSnapshots,
} from '../operator/scheduled-snapshots.js';
import { ChangeRelay } from './change-relay.js';
import { ChangeSenders } from './change-senders.js';
import { workerExecArgv } from './collector-flags.js';
import type { SupervisorMessage, WorkerMessage } from './messages.js';
import { clusterMetrics } from './metrics-cluster.js';
import { listenForMetrics, type MetricsListener } from './metrics-listener.js';

/** A worker's drain (10 s for its connections, 5 s for requests still running) and its closing, then SIGKILL. */
const SHUTDOWN_GRACE_MS = 20_000;
const MAX_RESTART_DELAY_MS = 10_000;

export interface SupervisorOptions {
  readonly onGeneratedRootToken: (token: string) => void;
  /** coffer serve --accept-rollback: prepare the store even when it was put back from an older copy. */
  readonly acceptRollback?: boolean;
}

export async function runSupervisor(
  config: CofferConfig,
  log: Logger,
  options: SupervisorOptions,
): Promise<void> {
  // Every check that can refuse the start runs before anything is created (store, key file, root token).
  readTls(config);
  await checkListenable(config);
  if (config.snapshot.dir !== null) ensureDirectory(config.snapshot.dir, 'COFFER_SNAPSHOT_DIR');
  const metricsText = clusterMetrics();
  const metricsListener = await listenOwnMetrics(config, metricsText, log);
  await prepareStore(config, {
    log,
    onGeneratedRootToken: options.onGeneratedRootToken,
    acceptRollback: options.acceptRollback === true,
  });
  // Workers accept connections from the shared socket themselves. With node's default round-robin the
  // primary accepts and hands connections over, and those handed to a worker as it dies hang forever;
  // the kernel instead keeps unaccepted connections for the surviving workers. It is also faster
  // (measured: ~40% more durable writes with two workers).
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  // Each worker runs with the collector's flags (collector-flags.ts).
  cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv) });
  const count = config.workers === 0 ? availableParallelism() : config.workers;

  let stopping = false;
  let started = false;
  let restartDelay = 0;
  const live = new Set<Worker>();
  /** The live workers that have said they are ready: only they listen for messages. */
  const serving = new Set<Worker>();
  // A message to a worker that has just died fails; its 'exit' is handled below, the failure is no news.
  const tell = (worker: Worker, message: SupervisorMessage): void =>
    void worker.send(message, undefined, undefined, () => undefined);
  /** Where each worker holds waits: a change is relayed only to those it wakes. */
  const relay = new ChangeRelay<Worker>();
  /** Which workers send their changes at all: only while another worker holds a wait. */
  const senders = new ChangeSenders<Worker>(relay, tell);
  /** Passes `message` on to the serving workers other than `from` that hold a wait it wakes. */
  const relayed = (from: Worker, ref: KeyRef | undefined, message: SupervisorMessage): void => {
    for (const other of relay.targets(from, ref))
      if (serving.has(other) && other.isConnected()) tell(other, message);
  };

  const fork = (): Worker => {
    const worker = cluster.fork();
    live.add(worker);
    const bornAt = Date.now();
    // Never let an error emitted on a worker (its channel) end the supervisor.
    worker.on('error', (err: Error) =>
      log.warn({ pid: worker.process.pid, err: { message: err.message } }, 'worker channel error'),
    );
    worker.on('message', (message: WorkerMessage) => {
      if (message?.type === 'ready') {
        serving.add(worker);
        senders.ready(worker, serving);
        // A worker that was still starting when the shutdown began is told now: told earlier, before
        // it listened, it would not have heard.
        if (stopping) tell(worker, { type: 'shutdown' });
      } else if (message?.type === 'metrics.request') {
        const { id } = message;
        metricsText().then(
          (text) => tell(worker, { type: 'metrics.answer', id, text }),
          (err: unknown) =>
            tell(worker, { type: 'metrics.answer', id, error: (err as Error).message }),
        );
      } else if (message?.type === 'kv.interest') {
        relay.interest(worker, message.where, message.held);
        // Taken once every other worker that must now send its changes knows it (change-senders.ts).
        senders.interest(worker, serving, () =>
          tell(worker, { type: 'kv.interest.taken', id: message.id }),
        );
      } else if (message?.type === 'kv.siblings.taken') {
        senders.taken(worker, message.id);
      } else if (message?.type === 'kv.changed') {
        // A key one worker changed wakes the waits the others hold on it (kv/key-changes.ts).
        const { namespace, key } = message;
        relayed(worker, { namespace, key }, { type: 'kv.changed', namespace, key });
      } else if (message?.type === 'kv.moved') {
        // A worker's event log moved on without a key changing: the others' streams and webhooks read.
        relayed(worker, undefined, { type: 'kv.moved' });
      }
    });
    worker.on('exit', (code, signal) => {
      live.delete(worker);
      serving.delete(worker);
      relay.gone(worker);
      senders.gone(worker, serving);
      if (stopping) return;
      if (!started) {
        log.fatal({ code, signal }, 'a worker failed to start; stopping');
        void shutdown(1);
        return;
      }
      // A worker that dies young may die again at once: back off, up to MAX_RESTART_DELAY_MS.
      restartDelay =
        Date.now() - bornAt < 5_000
          ? Math.min(MAX_RESTART_DELAY_MS, Math.max(100, restartDelay * 2))
          : 0;
      log.error(
        { pid: worker.process.pid, code, signal, restart_in_ms: restartDelay },
        'worker exited; starting a replacement',
      );
      setTimeout(() => {
        if (!stopping) fork();
      }, restartDelay);
    });
    return worker;
  };

  let snapshots: ScheduledSnapshots | undefined;
  const shutdown = async (exitCode: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ workers: live.size }, 'shutting down: draining workers');
    const snapshotsStopped = snapshots?.stop();
    const exited = [...live].map(
      (w) =>
        new Promise<void>((resolve) => (w.isDead() ? resolve() : w.once('exit', () => resolve()))),
    );
    for (const worker of serving) tell(worker, { type: 'shutdown' });
    const timer = setTimeout(() => {
      for (const worker of live) worker.process.kill('SIGKILL');
    }, SHUTDOWN_GRACE_MS);
    await Promise.all(exited);
    clearTimeout(timer);
    await snapshotsStopped;
    await metricsListener?.close();
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGINT', () => void shutdown(0));

  const ready = Array.from({ length: count }, () => {
    const worker = fork();
    return new Promise<string>((resolve) => {
      worker.on('message', (message: WorkerMessage) => {
        if (message?.type === 'ready') resolve(message.url);
      });
    });
  });
  const urls = await Promise.all(ready);
  started = true;
  log.info(
    { url: urls[0], console: `${config.public_url ?? urls[0]}/ui/`, workers: count },
    'coffer listening; the web console is at %s/ui/',
    config.public_url ?? urls[0],
  );
  const { dir, every, keep } = config.snapshot;
  if (dir !== null && every !== null && !stopping) {
    snapshots = startScheduledSnapshots({
      storage: config,
      dir,
      everyMs: parseDuration(every)!,
      keep,
      log,
    });
    log.info(
      { dir, every, keep },
      'scheduled snapshots: one every %s into %s, keeping %d',
      every,
      dir,
      keep,
    );
  }
}

/** The metrics' own address, when configured: bound before anything else starts, so a taken port refuses the start. */
async function listenOwnMetrics(
  config: CofferConfig,
  metricsText: () => Promise<string>,
  log: Logger,
): Promise<MetricsListener | undefined> {
  const { port, host } = config.metrics;
  if (port === null) return undefined;
  let listener: MetricsListener;
  try {
    listener = await listenForMetrics({ host, port }, metricsText, (err) =>
      log.warn(
        { event: 'metrics.failed', reason: err.message },
        'the metrics could not be gathered',
      ),
    );
  } catch (err) {
    throw new Error(
      `cannot listen for the metrics on ${host}:${port} (COFFER_METRICS_HOST, COFFER_METRICS_PORT): ${(err as Error).message}`,
    );
  }
  log.info({ metrics_url: listener.url }, 'metrics listening (no token needed there)');
  return listener;
}
