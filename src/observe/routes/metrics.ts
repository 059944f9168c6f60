/** GET /v1/sys/metrics: Prometheus' text format, summed over the server's workers (observe/metrics.ts). */
import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';

export interface MetricsRouteDeps {
  /** The metrics of every worker of this server, as Prometheus text. */
  readonly metricsText: () => Promise<string>;
  readonly respond: Responder;
}

export function metricsOperations({ metricsText, respond }: MetricsRouteDeps): Operation[] {
  const metrics: Operation = {
    method: 'GET',
    template: '/v1/sys/metrics',
    action: 'metrics.read',
    privilege: 'read_metrics',
    docs: [
      {
        operationId: 'getMetrics',
        summary:
          "The server's metrics in Prometheus' text format, summed over its workers: requests by operation and status class, latency, audit write latency, refused authentications, held waits, the keyring and rewrap, and the process's own. No label ever holds a key, a namespace, a token id or a value. Needs read_metrics (the built-in role metrics)",
        responses: {
          200: {
            description: 'Prometheus text exposition format 0.0.4',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
        errors: [403],
      },
    ],
    async handler(_req, res) {
      respond.raw(res, 200, 'text/plain; version=0.0.4; charset=utf-8', await metricsText());
    },
  };
  return [metrics];
}
