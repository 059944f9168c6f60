/**
 * The composition root, read as what a server does at start: open the store (startup/open-store.ts),
 * open the audit log (startup/server-audit.ts), open each feature (features.ts; api/feature.ts is their
 * contract), serve their operations over HTTP (http/), follow the keyring (startup/keyring-follower.ts);
 * and at a stop, the same in reverse. Nothing here is module-level state, so two apps can run in one
 * process (as the tests do).
 */
import type { Server } from 'node:http';
import { pino } from 'pino';
import type { Mounted, ServerContext, StartOptions } from './api/feature.js';
import type { AuditLog } from './audit/audit-log.js';
import { integrityReporter } from './audit/integrity-reports.js';
import type { CofferConfig } from './config/schema.js';
import { openFeatures } from './features.js';
import { buildHttpApp } from './http/http-app.js';
import { readTls, serveHttp, stopServing } from './http/http-server.js';
import { CofferMetrics } from './observe/metrics.js';
import type { Tidy } from './operator/tidy.js';
import { followKeyring } from './startup/keyring-follower.js';
import { openStore } from './startup/open-store.js';
import { openServerAudit } from './startup/server-audit.js';
import type { KeyringHolder } from './store/keyring-store.js';
import type { Records, Store } from './store/store.js';

export type { StartOptions } from './api/feature.js';
export type { KeyPeers, KeyRef } from './kv/key-changes.js';
/** Where the waits a change wakes are held: the supervisor relays a change to the workers holding them. */
export { wakesOf } from './kv/key-changes.js';

export interface RunningCoffer {
  readonly server: Server;
  /** e.g. http://127.0.0.1:8750 */
  readonly url: string;
  readonly store: Store;
  readonly records: Records;
  readonly keyring: KeyringHolder;
  /** Tidies the store now (it also runs on its own, hourly: operator/tidy.ts). */
  readonly tidy: Pick<Tidy, 'run'>;
  /** Stops accepting connections, lets requests in flight finish (up to `drainMs`), closes storage. */
  close(drainMs?: number): Promise<void>;
}

/**
 * First-start work done once before any server process starts: master key, keyring, root token. The
 * supervisor's own short audit chain records it (`server.prepare`, a root-token change).
 */
export async function prepareStore(
  config: CofferConfig,
  options: StartOptions = {},
): Promise<void> {
  const log = options.log ?? pino({ level: config.log_level });
  const now = options.now ?? Date.now;
  const opened = await openStore(config, log, { ...options, now, prepare: true });
  try {
    const { audit } = await openServerAudit(config, opened, log, now, {
      firstEvent: 'server.prepare',
      prepare: true,
      acceptRollback: options.acceptRollback,
    });
    await audit?.close();
  } finally {
    await opened.store.close();
  }
}

export async function startCoffer(
  config: CofferConfig,
  options: StartOptions = {},
): Promise<RunningCoffer> {
  const log = options.log ?? pino({ level: config.log_level });
  const now = options.now ?? Date.now;
  // Checked before anything is created: a missing certificate file stops start-up in one line.
  const tls = readTls(config);
  const prepare = options.prepare !== false;
  const opened = await openStore(config, log, { ...options, now, prepare });
  const { store, keyring } = opened;
  const features: Mounted[] = [];
  let audit: AuditLog | undefined;
  try {
    const started = await openServerAudit(config, opened, log, now, {
      firstEvent: 'server.start',
      prepare,
      enabled: options.audit !== false,
      acceptRollback: options.acceptRollback,
    });
    audit = started.audit;
    const onIntegrityError = integrityReporter(started.events, now);
    const ctx: ServerContext = {
      config,
      options,
      log,
      now,
      store,
      keyring,
      audit,
      events: started.events,
      root: opened.root,
      // Logged and audited with the record's kind and storage key, never its bytes.
      onIntegrityError,
      records: store.records(keyring, onIntegrityError),
      metrics: new CofferMetrics({
        postgres: store.shared,
        snapshots: config.snapshot.dir !== null && config.snapshot.every !== null,
      }),
      secureCookies: tls !== null || config.public_url?.startsWith('https://') === true,
    };
    const { operations, auth } = await openFeatures(ctx, features);
    const app = buildHttpApp({ ...ctx, operations, authenticate: auth.authenticate, tls: !!tls });
    const { server, url } = await serveHttp(app, config, tls);
    const follower = followKeyring({
      store,
      keyring,
      everyMs: options.followEveryMs ?? 1000,
      log,
      afterRefresh: () => auth.followRoot(),
    });
    return {
      server,
      url,
      store,
      records: ctx.records,
      keyring,
      tidy: auth.tidy,
      async close(drainMs = 10_000) {
        await stopServing(server, app, drainMs, features, log);
        follower.stop();
        await closeInReverse(features);
        await app.close();
        await audit?.event('server.stop', { pid: process.pid });
        await audit?.close();
        await store.close();
      },
    };
  } catch (err) {
    await closeInReverse(features);
    if (audit) {
      await audit.event('server.start_failed', {
        pid: process.pid,
        reason: (err as Error).message,
      });
      await audit.close();
    }
    await store.close();
    throw err;
  }
}

async function closeInReverse(features: readonly Mounted[]): Promise<void> {
  for (const feature of [...features].reverse()) await feature.close();
}
