/**
 * What the server counts, served: GET /v1/sys/metrics (routes/metrics.ts), summed over the server's workers
 * when a supervisor runs them. The gauges of storage and of the audit streams are fed from here; each
 * other feature adds its own when it opens.
 */
import type { Feature } from '../api/feature.js';
import { metricsOperations } from './routes/metrics.js';

export const observeFeature: Feature<{ readonly metricsText: () => Promise<string> }> = {
  name: 'observe',
  open({ options, store, audit, metrics }) {
    store.observeWrites({
      written: (seconds) => metrics.storageWrite.observe(seconds),
      committed: (writes) => metrics.commitWrites.observe(writes),
    });
    metrics.sources.storage = () => store.storageGauges();
    if (audit) metrics.sources.auditStreams = () => audit.streams();
    return {
      services: { metricsText: options.serverMetrics?.(metrics) ?? (() => metrics.text()) },
    };
  },
  operations: ({ metricsText }, { respond }) =>
    metricsOperations({ metricsText: () => metricsText(), respond }),
};
