/**
 * A server's metrics summed over its workers (prom-client's AggregatorRegistry, over the cluster's IPC): a
 * worker asked for /v1/sys/metrics asks the supervisor, which gathers every worker's registry, sums
 * counters and histograms (and takes the largest of the keyring and rewrap gauges, the same everywhere), and
 * answers the worker that asked.
 */
import { AggregatorRegistry } from 'prom-client';
import type { CofferMetrics } from '../observe/metrics.js';
import type { MetricsAnswer, WorkerMessage } from './messages.js';

const WAIT_MS = 10_000;

/**
 * For a worker: hands its registry to the aggregation (so the supervisor can gather it), and gives the way
 * to read every worker's metrics through the supervisor.
 */
export function workerMetrics(
  send: (message: WorkerMessage) => void,
  answers: Set<(message: MetricsAnswer) => void>,
): (metrics: CofferMetrics) => () => Promise<string> {
  return (metrics) => {
    AggregatorRegistry.setRegistries([metrics.registry]);
    // Constructing one installs the worker's listener for the supervisor's requests.
    new AggregatorRegistry();
    let next = 0;
    return () =>
      new Promise((resolve, reject) => {
        const id = ++next;
        const timer = setTimeout(() => {
          answers.delete(listener);
          reject(new Error(`the supervisor did not answer the metrics within ${WAIT_MS} ms`));
        }, WAIT_MS);
        const listener = (answer: MetricsAnswer): void => {
          if (answer.id !== id) return;
          clearTimeout(timer);
          answers.delete(listener);
          if (answer.text === undefined) reject(new Error(answer.error ?? 'no metrics'));
          else resolve(answer.text);
        };
        answers.add(listener);
        send({ type: 'metrics.request', id });
      });
  };
}

/**
 * For the supervisor: every worker's metrics, summed. Scrapes that come while a gathering is under way share
 * it, so however many arrive at once (the metrics address needs no token) the workers are asked once.
 */
export function clusterMetrics(): () => Promise<string> {
  const aggregator = new AggregatorRegistry();
  let gathering: Promise<string> | undefined;
  return () => {
    gathering ??= aggregator.clusterMetrics().finally(() => {
      gathering = undefined;
    });
    return gathering;
  };
}
