/**
 * Is this server able to serve (GET /v1/sys/health): can it reach its storage now, and can it write its
 * audit log. Answered without a token, for load balancers and service managers, so it says no more than
 * that: no keyring, token or store contents, no address or setting.
 *
 * The storage check is one read of the keyring generation record, the record every server reads each
 * second anyway; on PostgreSQL it is bounded by the statement timeout, so a hanging database makes the
 * check answer "unreachable" within it instead of hanging the probe.
 */
import type { AuditLog } from '../audit/audit-log.js';
import type { DiskWatch } from '../audit/disk-watch.js';
import { AppError } from '../errors.js';
import type { Store } from '../store/store.js';
import { StorageUnavailableError } from '../store/store-errors.js';

export interface HealthReport {
  /** `ok` when every check passed; `unavailable` when this server cannot serve requests now. */
  readonly status: 'ok' | 'unavailable';
  readonly storage: {
    readonly backend: string;
    readonly reachable: boolean;
    /** How long the check's read took, in milliseconds (null when it failed). */
    readonly latency_ms: number | null;
  };
  readonly audit: {
    /** False while the audit log cannot be written (requests are then refused, unless audit.fail_open). */
    readonly writable: boolean;
    /** Free space for the audit files is below audit.min_free_bytes (a warning: requests still succeed). */
    readonly disk_low: boolean;
    /**
     * Audit streams that do not take lines now (their lines wait, in order); a required one among them
     * makes the log refuse requests, and so `writable` false.
     */
    readonly streams_down: number;
  };
}

export interface HealthDeps {
  readonly store: Pick<Store, 'probe'>;
  /** The configured backend's name, as COFFER_STORAGE says it. */
  readonly backend: string;
  /** Absent when the server runs without an audit log (only a benchmark does). */
  readonly audit?: Pick<AuditLog, 'failing' | 'refusing' | 'streams'>;
  readonly disk?: Pick<DiskWatch, 'state'>;
}

export class HealthCheck {
  /** The storage check in flight: probes that arrive meanwhile share it (a flood of them makes one read). */
  private probing: Promise<{ reachable: boolean; latency_ms: number | null }> | null = null;

  constructor(private readonly deps: HealthDeps) {}

  async report(): Promise<HealthReport> {
    this.probing ??= this.probeStorage().finally(() => {
      this.probing = null;
    });
    const storage = await this.probing;
    const writable = !(this.deps.audit?.failing ?? false);
    // With audit.fail_open a failing log does not stop requests: the server still serves, and says so.
    const refusing = this.deps.audit?.refusing ?? false;
    return {
      status: storage.reachable && !refusing ? 'ok' : 'unavailable',
      storage: { backend: this.deps.backend, ...storage },
      audit: {
        writable,
        disk_low: this.deps.disk?.state().low ?? false,
        streams_down: this.deps.audit?.streams().filter((stream) => !stream.up).length ?? 0,
      },
    };
  }

  private async probeStorage(): Promise<{ reachable: boolean; latency_ms: number | null }> {
    const started = performance.now();
    try {
      await this.deps.store.probe();
    } catch (err) {
      if (err instanceof StorageUnavailableError) return { reachable: false, latency_ms: null };
      throw err;
    }
    return {
      reachable: true,
      latency_ms: Math.round((performance.now() - started) * 1000) / 1000,
    };
  }
}

/**
 * Why a server whose report is not ok cannot serve: 503 audit_unavailable or storage_unavailable, to try
 * again in a second (`members`: what the problem carries besides, e.g. the report itself).
 */
export function cannotServe(report: HealthReport, members?: Record<string, unknown>): AppError {
  return new AppError(
    report.storage.reachable ? 'audit_unavailable' : 'storage_unavailable',
    report.storage.reachable ? 'the audit log cannot be written' : 'the storage cannot be reached',
    undefined,
    { 'Retry-After': '1' },
    members,
  );
}
