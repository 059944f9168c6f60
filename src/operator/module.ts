/**
 * The operator's feature: the keyring and master key (routes/sys.ts: rotate, rewrap, migrate), the
 * scheduled snapshots' listing (routes/snapshots.ts), health (routes/health.ts) and the audit log's review
 * (routes/audit.ts); and what runs on its own: automatic keyring rotation and the audit disk's watch.
 */
import type { Feature } from '../api/feature.js';
import { vaultMounts } from '../api/vault-dialect.js';
import { type DiskWatch, watchDisk } from '../audit/disk-watch.js';
import type { CofferConfig } from '../config/schema.js';
import { AuditReview } from './audit-review.js';
import { parseDuration, startAutoRotation } from './auto-rotate.js';
import { ChainReport } from './chain-report.js';
import { HealthCheck } from './health.js';
import { KeyringOperations } from './keyring-operations.js';
import { Rewrapper } from './rewrap.js';
import { auditOperations } from './routes/audit.js';
import { healthOperations } from './routes/health.js';
import { type SnapshotSchedule, snapshotOperations } from './routes/snapshots.js';
import { sysOperations } from './routes/sys.js';
import { vaultSysOperations } from './routes/vault-sys.js';
import { newestSnapshotTime } from './scheduled-snapshots.js';

export interface OperatorServices {
  readonly rewrapper: Rewrapper;
  readonly operations: KeyringOperations;
  readonly health: HealthCheck;
  readonly review: AuditReview;
  readonly chains: ChainReport;
  /** null: the server takes no scheduled snapshots. */
  readonly snapshots: SnapshotSchedule | null;
}

/** The scheduled snapshots the configuration asks for, if any. */
export function snapshotSchedule(config: Pick<CofferConfig, 'snapshot'>): SnapshotSchedule | null {
  const { dir, every, keep } = config.snapshot;
  return dir !== null && every !== null
    ? { dir, every, everyMs: parseDuration(every)!, keep }
    : null;
}

export const operatorFeature: Feature<OperatorServices> = {
  name: 'operator',
  open({ config, store, records, keyring, events, audit, metrics, log, now }) {
    const rewrapper = new Rewrapper({
      records: records.rewrap,
      kv: records.kv,
      keyring,
      now,
      log,
      events,
    });
    const disk: DiskWatch | undefined = audit
      ? watchDisk(config.audit.dir!, config.audit.min_free_bytes, log)
      : undefined;
    const snapshots = snapshotSchedule(config);
    if (snapshots) metrics.sources.newestSnapshot = () => newestSnapshotTime(snapshots.dir);
    metrics.sources.keyring = () => ({
      generation: keyring.generation,
      activeVersion: keyring.current().activeVersion,
    });
    metrics.sources.rewrap = async () => {
      const state = await rewrapper.state().catch(() => null);
      return state
        ? { running: rewrapper.running(state), examined: state.examined, total: state.total }
        : undefined;
    };
    const rotateAfter =
      config.keyring.rotate_after === null ? undefined : parseDuration(config.keyring.rotate_after);
    const autoRotation =
      rotateAfter === undefined ? undefined : startAutoRotation(keyring, rotateAfter, events, now);
    return {
      services: {
        rewrapper,
        operations: new KeyringOperations({
          kv: records.kv,
          keyring,
          events,
          now,
          settings: config,
        }),
        health: new HealthCheck({
          store,
          backend: config.storage,
          ...(audit ? { audit } : {}),
          ...(disk ? { disk } : {}),
        }),
        review: new AuditReview({ store, records, auditDir: config.audit.dir!, now }),
        chains: new ChainReport(records.audit),
        snapshots,
      },
      async close() {
        await autoRotation?.stop();
        disk?.stop();
        // A rewrap in progress stops at its next batch boundary; its state is saved for a later run.
        await rewrapper.stop();
      },
    };
  },
  operations(operator, { config, respond, now }) {
    return [
      ...sysOperations({ rewrapper: operator.rewrapper, operations: operator.operations, respond }),
      ...snapshotOperations({ schedule: operator.snapshots, now, respond }),
      ...healthOperations({ health: operator.health, respond }),
      ...vaultSysOperations({
        health: operator.health,
        mounts: vaultMounts(config.vault.mounts),
        storage: config.storage,
        respond,
      }),
      ...auditOperations({ review: operator.review, chains: operator.chains, respond }),
    ];
  },
};
