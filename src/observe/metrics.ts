/**
 * Prometheus metrics (prom-client), one registry per process; a server of several workers answers them summed
 * over its workers (server/metrics-cluster.ts). Labels are bounded sets only — an operation's audit action,
 * a status class, a storage backend — never a key name, a namespace, a token id or a value.
 *
 *   coffer_http_requests_total{operation,status_class}       requests answered
 *   coffer_http_request_duration_seconds{operation}          their latency
 *   coffer_auth_failures_total                              refused authentications (401)
 *   coffer_audit_write_duration_seconds                     a request's audit entry until it is durable
 *   coffer_storage_write_duration_seconds                   a storage write, asked for until durable
 *   coffer_storage_commit_writes                            writes made durable by one commit (group commit)
 *   coffer_snapshot_newest_timestamp_seconds                 with scheduled snapshots: the newest one's time
 *   coffer_audit_stream_up{stream}, coffer_audit_stream_lag_lines{stream}, …_delivered_lines{stream}
 *   coffer_webhook_attempts{webhook,outcome}, coffer_webhook_failing{webhook}, coffer_webhook_behind{webhook}
 * and on PostgreSQL
 *   coffer_storage_writes_queued                            writes waiting for a group commit
 *   coffer_pg_pool_connections{state}, coffer_pg_pool_max, coffer_pg_pool_waiting
 *   coffer_pg_notification_lag_seconds                      a probe notification, sent until heard
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

/**
 * The storage's state when scraped: what store/store.ts's storageGauges answers (storage/backend.ts's
 * StorageGauges, the same shape; observe/ imports nothing of the server's, so it states what it reads).
 */
export interface StorageFacts {
  readonly pool?: {
    readonly max: number;
    readonly busy: number;
    readonly idle: number;
    readonly waiting: number;
  };
  readonly writesQueued?: number;
  readonly notificationLagSeconds?: number;
}

/** What the gauges read when scraped (each optional: a process that has no such part says nothing). */
export interface MetricSources {
  storage?: () => StorageFacts;
  /** When the newest scheduled snapshot's state was taken (ms since the epoch); undefined: none yet. */
  newestSnapshot?: () => Promise<number | undefined>;
  kvWaitsHeld?: () => number;
  keyring?: () => { generation: number; activeVersion: number };
  rewrap?: () => Promise<RewrapFacts | undefined>;
  /** Each audit stream of this process's chain (audit/streams/audit-stream.ts's StreamState). */
  auditStreams?: () => readonly {
    readonly name: string;
    readonly up: boolean;
    readonly lag: number;
    readonly delivered: number;
  }[];
  /** Each webhook this process delivers (kv/webhooks/webhook-delivery.ts's DeliveryState). */
  webhooks?: () => readonly {
    readonly name: string;
    readonly delivered: number;
    readonly failed: number;
    readonly failing: boolean;
    readonly behind: number;
  }[];
}

const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];
/** Writes per commit: a group holds at most 64 (storage/postgres-backend.ts); LMDB's may hold more. */
const GROUP_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128];

/**
 * A maker of gauges without labels, each set when scraped to what `read` gives (left alone when it gives
 * undefined: a part the process does not have). `max` where every worker sees the same thing.
 */
function unlabelledGauge(registers: Registry[]) {
  return (
    name: string,
    help: string,
    read: () => number | undefined | Promise<number | undefined>,
    aggregator?: 'max',
  ): void => {
    new Gauge({
      name,
      help,
      registers,
      ...(aggregator ? { aggregator } : {}),
      async collect() {
        const value = await read();
        if (value !== undefined) this.set(value);
      },
    });
  };
}

export class CofferMetrics {
  readonly registry = new Registry();
  private readonly requests: StatusCounter;
  private readonly durations: LabelledHistogram;
  private readonly authFailures: Counter;
  /** Changes another worker of this server made that were relayed to this one (server/change-relay.ts). */
  readonly kvChangesRelayed: Counter;
  /** Changes this worker made and sent to the supervisor, as another worker held a wait (server/change-senders.ts). */
  readonly kvChangesPublished: Counter;
  readonly auditWrite: LabelledHistogram;
  /** A storage write from asked for to durable; and the writes each commit made durable together. */
  readonly storageWrite: LabelledHistogram;
  readonly commitWrites: LabelledHistogram;
  /** The sources the gauges read; filled in by the parts that have them, as they start. */
  readonly sources: MetricSources = {};

  /**
   * `postgres`: the storage is PostgreSQL, whose pool, queue and notifications have gauges of their own;
   * `snapshots`: the server takes scheduled snapshots, whose newest has a gauge.
   */
  constructor(options: { readonly postgres?: boolean; readonly snapshots?: boolean } = {}) {
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
    this.storageWrite = new LabelledHistogram(
      'coffer_storage_write_duration_seconds',
      'A write to the storage, from asked for to durable (a group commit included)',
      LATENCY_BUCKETS,
    );
    this.commitWrites = new LabelledHistogram(
      'coffer_storage_commit_writes',
      'Writes made durable by one commit: group commit shares a commit (one flush) among the writes asked for together',
      GROUP_BUCKETS,
    );
    for (const metric of [
      this.requests,
      this.durations,
      this.auditWrite,
      this.storageWrite,
      this.commitWrites,
    ])
      this.registry.registerMetric(metric as never);
    this.authFailures = new Counter({
      name: 'coffer_auth_failures_total',
      help: 'Authentications refused (401)',
      registers,
    });
    this.kvChangesRelayed = new Counter({
      name: 'coffer_kv_changes_relayed_total',
      help: 'Changes made by another worker of this server and relayed to this one, which holds a wait they wake',
      registers,
    });
    this.kvChangesPublished = new Counter({
      name: 'coffer_kv_changes_published_total',
      help: 'Changes made by this worker and sent to the supervisor, while another worker held a wait',
      registers,
    });
    const sources = this.sources;
    const gauge = unlabelledGauge(registers);
    gauge(
      'coffer_kv_waits_held',
      'Reads held waiting for a change of their key',
      () => sources.kvWaitsHeld?.() ?? 0,
    );
    if (options.postgres) {
      const storage = () => sources.storage?.();
      gauge(
        'coffer_storage_writes_queued',
        'Writes waiting for a group commit to take them (PostgreSQL)',
        () => storage()?.writesQueued,
      );
      new Gauge({
        name: 'coffer_pg_pool_connections',
        help: "PostgreSQL connections of the server's pools, by state (busy: checked out; idle: open, free)",
        labelNames: ['state'],
        registers,
        collect() {
          const pool = storage()?.pool;
          if (!pool) return;
          this.set({ state: 'busy' }, pool.busy);
          this.set({ state: 'idle' }, pool.idle);
        },
      });
      gauge(
        'coffer_pg_pool_max',
        "The most connections the server's pools open (COFFER_PG_POOL_SIZE per worker)",
        () => storage()?.pool?.max,
      );
      gauge(
        'coffer_pg_pool_waiting',
        'Queries waiting for a free PostgreSQL connection',
        () => storage()?.pool?.waiting,
      );
      gauge(
        'coffer_pg_notification_lag_seconds',
        "A probe notification (sent every 10 s), from sent to heard on this server's listening connection; while one is unheard, how long it has been, if longer. The slowest worker's",
        () => storage()?.notificationLagSeconds,
        'max',
      );
    }
    if (options.snapshots)
      gauge(
        'coffer_snapshot_newest_timestamp_seconds',
        'The state the newest scheduled snapshot holds (its interval start), in seconds since the epoch; 0 while there is none',
        async () => {
          const newest = await sources.newestSnapshot?.().catch(() => undefined);
          return newest === undefined ? 0 : newest / 1000;
        },
        'max',
      );
    gauge(
      'coffer_keyring_generation',
      "The keyring's generation (grows with every change to it)",
      () => sources.keyring?.().generation,
      'max',
    );
    gauge(
      'coffer_keyring_active_version',
      'The keyring version new records are sealed with',
      () => sources.keyring?.().activeVersion,
      'max',
    );
    // Per configured stream (its ?name=, an operator's word: a bounded set). Summed over the workers, each
    // shipping its own chain; `up` is the fewest: a stream down in one worker is down.
    for (const [name, help, read, aggregator] of [
      [
        'coffer_audit_stream_up',
        '1 while the audit stream takes lines, 0 while they wait for it (COFFER_AUDIT_STREAMS)',
        (s: { up: boolean }) => (s.up ? 1 : 0),
        'min',
      ],
      [
        'coffer_audit_stream_lag_lines',
        'Audit lines written locally and not yet delivered to the stream',
        (s: { lag: number }) => s.lag,
        'sum',
      ],
      [
        'coffer_audit_stream_delivered_lines',
        'Audit lines the stream has taken since the server started',
        (s: { delivered: number }) => s.delivered,
        'sum',
      ],
    ] as const)
      new Gauge({
        name,
        help,
        labelNames: ['stream'],
        registers,
        aggregator,
        collect() {
          for (const stream of sources.auditStreams?.() ?? [])
            this.set({ stream: stream.name }, read(stream as never));
        },
      });
    // Per webhook (its name, an operator's word: at most 64). Only the process holding the delivery lease
    // has any; summed over the workers, that one's figures.
    new Gauge({
      name: 'coffer_webhook_attempts',
      help: 'Webhook delivery attempts since this process took up delivery, by outcome (delivered, failed)',
      labelNames: ['webhook', 'outcome'],
      registers,
      aggregator: 'sum',
      collect() {
        this.reset();
        for (const w of sources.webhooks?.() ?? []) {
          this.set({ webhook: w.name, outcome: 'delivered' }, w.delivered);
          this.set({ webhook: w.name, outcome: 'failed' }, w.failed);
        }
      },
    });
    for (const [name, help, read] of [
      [
        'coffer_webhook_failing',
        "1 while the webhook's receiver does not take its messages (they wait, in order)",
        (w: { failing: boolean }) => (w.failing ? 1 : 0),
      ],
      [
        'coffer_webhook_behind',
        'Events in the log after what the webhook has delivered',
        (w: { behind: number }) => w.behind,
      ],
    ] as const)
      new Gauge({
        name,
        help,
        labelNames: ['webhook'],
        registers,
        aggregator: 'sum',
        collect() {
          this.reset();
          for (const w of sources.webhooks?.() ?? [])
            this.set({ webhook: w.name }, read(w as never));
        },
      });
    for (const [name, help, read] of [
      ['coffer_rewrap_running', '1 while a rewrap runs', (r: RewrapFacts) => (r.running ? 1 : 0)],
      ['coffer_rewrap_examined', 'Records the rewrap has examined', (r: RewrapFacts) => r.examined],
      ['coffer_rewrap_total', 'Records the rewrap has to examine', (r: RewrapFacts) => r.total],
    ] as const)
      gauge(
        name,
        help,
        async () => {
          const r = await sources.rewrap?.();
          return r && read(r);
        },
        'max',
      );
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
