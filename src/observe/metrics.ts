/**
 * Prometheus metrics (prom-client), one registry per process; a server of several workers answers them summed
 * over its workers (server/metrics-cluster.ts). Labels are bounded sets only — an operation's audit action,
 * a status class, a storage backend — never a key name, a namespace, a token id or a value.
 *
 *   coffer_http_requests_total{operation,status_class}       requests answered
 *   coffer_http_request_duration_seconds{operation}          their latency
 *   coffer_auth_failures_total                              refused authentications (401 and 429)
 *   coffer_audit_write_duration_seconds                     a request's audit entry until it is durable
 *   coffer_kv_waits_held                                    reads held waiting for a change
 *   coffer_keyring_generation, coffer_keyring_active_version
 *   coffer_rewrap_running, coffer_rewrap_examined, coffer_rewrap_total
 * and prom-client's process metrics (CPU, memory, event-loop lag), prefixed coffer_.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { LabelledHistogram, StatusCounter } from './fast-series.js';

/** A rewrap's progress, as the gauges show it. */
export interface RewrapFacts {
  readonly running: boolean;
  readonly examined: number;
  readonly total: number;
}

/** What the gauges read when scraped (each optional: a process that has no such part says nothing). */
export interface MetricSources {
  kvWaitsHeld?: () => number;
  keyring?: () => { generation: number; activeVersion: number };
  rewrap?: () => Promise<RewrapFacts | undefined>;
}

const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

export class CofferMetrics {
  readonly registry = new Registry();
  private readonly requests: StatusCounter;
  private readonly durations: LabelledHistogram;
  private readonly authFailures: Counter;
  readonly auditWrite: LabelledHistogram;
  /** The sources the gauges read; filled in by the parts that have them, as they start. */
  readonly sources: MetricSources = {};

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'coffer_' });
    this.requests = new StatusCounter(
      'coffer_http_requests_total',
      'Requests answered, by operation (its audit action) and status class',
      'operation',
    );
    this.durations = new LabelledHistogram(
      'coffer_http_request_duration_seconds',
      'Time from a request taken to its answer, by operation',
      LATENCY_BUCKETS,
      'operation',
    );
    this.auditWrite = new LabelledHistogram(
      'coffer_audit_write_duration_seconds',
      "A request's audit entry, from written to durable",
      LATENCY_BUCKETS,
    );
    for (const metric of [this.requests, this.durations, this.auditWrite])
      this.registry.registerMetric(metric as never);
    this.authFailures = new Counter({
      name: 'coffer_auth_failures_total',
      help: 'Authentications refused (401)',
      registers,
    });
    const sources = this.sources;
    new Gauge({
      name: 'coffer_kv_waits_held',
      help: 'Reads held waiting for a change of their key',
      registers,
      collect() {
        this.set(sources.kvWaitsHeld?.() ?? 0);
      },
    });
    new Gauge({
      name: 'coffer_keyring_generation',
      help: "The keyring's generation (grows with every change to it)",
      registers,
      aggregator: 'max',
      collect() {
        const k = sources.keyring?.();
        if (k) this.set(k.generation);
      },
    });
    new Gauge({
      name: 'coffer_keyring_active_version',
      help: 'The keyring version new records are sealed with',
      registers,
      aggregator: 'max',
      collect() {
        const k = sources.keyring?.();
        if (k) this.set(k.activeVersion);
      },
    });
    for (const [name, help, read] of [
      ['coffer_rewrap_running', '1 while a rewrap runs', (r: RewrapFacts) => (r.running ? 1 : 0)],
      ['coffer_rewrap_examined', 'Records the rewrap has examined', (r: RewrapFacts) => r.examined],
      ['coffer_rewrap_total', 'Records the rewrap has to examine', (r: RewrapFacts) => r.total],
    ] as const)
      new Gauge({
        name,
        help,
        registers,
        aggregator: 'max',
        async collect() {
          const r = await sources.rewrap?.();
          if (r) this.set(read(r));
        },
      });
  }

  /** One answered request. */
  answered(operation: string, status: number, seconds: number): void {
    this.requests.inc(operation, status);
    this.durations.observe(seconds, operation);
    if (status === 401) this.authFailures.inc();
  }

  /** This process's metrics, in Prometheus' text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
