/**
 * The composition root: the only place Coffer's objects are constructed and wired. It reads as what a
 * server does at start: open the store (startup/open-store.ts), open the audit log (startup/open-audit.ts),
 * build the services, serve HTTP (http/http-server.ts), follow the keyring (startup/keyring-follower.ts).
 * Nothing here is module-level state, so two apps can run in one process (as the tests do).
 */
import type { Server } from 'node:http';
import { type Logger, pino } from 'pino';
import type { AuditLog } from './audit/audit-log.js';
import { type DiskWatch, watchDisk } from './audit/disk-watch.js';
import { operatorEvents } from './audit/events.js';
import { FailureSummary } from './audit/failure-summary.js';
import { integrityReporter } from './audit/integrity-reports.js';
import { Argon2Gate } from './auth/argon2-gate.js';
import { Authenticator } from './auth/authenticator.js';
import { ConsoleSessions } from './auth/console-sessions.js';
import { FailureLimiter } from './auth/failure-limiter.js';
import { FailureRate } from './auth/failure-rate.js';
import { JwtLogin } from './auth/jwt-login.js';
import { KeySets } from './auth/key-sets.js';
import { OidcLogin } from './auth/oidc-login.js';
import { PrincipalFactory } from './auth/principal.js';
import { RoleAdmin } from './auth/role-admin.js';
import { CurrentRoot } from './auth/root-token.js';
import { TokenService } from './auth/token-service.js';
import type { CofferConfig } from './config/schema.js';
import { STORE_FORMAT } from './crypto/keyring.js';
import { ConsoleCookies } from './http/console-cookie.js';
import { buildHttpApp } from './http/http-app.js';
import { readTls, serveHttp } from './http/http-server.js';
import type { OutcomeSink } from './http/outcome.js';
import { KeyChanges, type KeyRef } from './kv/key-changes.js';
import { KvService } from './kv/kv-service.js';
import type { OperatorEvents } from './model/operator-events.js';
import { CofferMetrics } from './observe/metrics.js';
import { AuditReview } from './operator/audit-review.js';
import { parseDuration, startAutoRotation } from './operator/auto-rotate.js';
import { HealthCheck } from './operator/health.js';
import { KeyringOperations } from './operator/keyring-operations.js';
import { Rewrapper } from './operator/rewrap.js';
import { newestSnapshotTime } from './operator/scheduled-snapshots.js';
import { startTidy, type Tidy } from './operator/tidy.js';
import { followChanges } from './startup/follow-changes.js';
import { followKeyring } from './startup/keyring-follower.js';
import { type AuditOpening, openAuditLog, recoverAuditLog } from './startup/open-audit.js';
import { type OpenedStore, openStore } from './startup/open-store.js';
import type { KeyringHolder } from './store/keyring-store.js';
import type { Records, Store } from './store/store.js';

export interface StartOptions {
  readonly log?: Logger;
  /** Receives a generated root token, the only time it exists in clear (main.ts prints it to stderr). */
  readonly onGeneratedRootToken?: (token: string) => void;
  readonly onOutcome?: OutcomeSink;
  readonly now?: () => number;
  /**
   * Whether this process sets up the store (master key, keyring, root token). A worker process of the
   * supervisor passes false: the supervisor did that once, before starting the workers.
   */
  readonly prepare?: boolean;
  /**
   * How often the keyring generation is checked for changes made by other processes (default 1000 ms).
   * Only tests change it, to show what reaches a server without the check; no setting reaches it.
   */
  readonly followEveryMs?: number;
  /** How often the store is tidied (operator/tidy.ts; default an hour). Only tests change it. */
  readonly tidyEveryMs?: number;
  /** Start on a store put back from an older copy (coffer serve --accept-rollback; open-audit.ts). */
  readonly acceptRollback?: boolean;
  /**
   * false runs without an audit log. Only for the benchmark that measures what the audit log costs
   * (bench/direct-server.ts); no configuration setting or variable reaches it.
   */
  readonly audit?: boolean;
  /**
   * The other processes of this server (the supervisor's workers): told of each key this process changes,
   * and telling of theirs, to wake the requests waiting for them (kv/key-changes.ts).
   */
  readonly peers?: KeyPeers;
  /**
   * Given this process's metrics once they exist, how the server's are read as Prometheus text (a worker asks
   * its supervisor for every worker's, summed: server/metrics-cluster.ts); default this process's alone.
   */
  readonly serverMetrics?: (metrics: CofferMetrics) => () => Promise<string>;
}

/** How a server process tells its siblings of a key it changed, and hears of theirs. */
export interface KeyPeers {
  publish(ref: KeyRef): void;
  subscribe(listener: (ref: KeyRef) => void): void;
}

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
    const opening = {
      ...auditOpening(config, opened, log, now),
      acceptRollback: options.acceptRollback,
    };
    const audit = await openAuditLog(opening, 'server.prepare');
    await recoverAuditLog(opening, audit, true);
    await recordStoreChanges(operatorEvents(log, audit), opened);
    await audit.close();
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
  // The browser reaches the console over HTTPS: Coffer's own TLS, or a proxy's that the public address names.
  const secureCookies = tls !== null || config.public_url?.startsWith('https://') === true;
  const prepare = options.prepare !== false;
  const opened = await openStore(config, log, { ...options, now, prepare });
  const { store, keyring } = opened;
  let audit: AuditLog | undefined;
  let disk: DiskWatch | undefined;
  try {
    const opening = {
      ...auditOpening(config, opened, log, now),
      acceptRollback: options.acceptRollback,
    };
    audit = options.audit === false ? undefined : await openAuditLog(opening, 'server.start');
    if (audit) await recoverAuditLog(opening, audit, prepare);
    const events = operatorEvents(log, audit);
    await recordStoreChanges(events, opened);
    // Logged and audited with the record's kind and storage key, never its bytes.
    const onIntegrityError = integrityReporter(events, now);
    const records = store.records(keyring, onIntegrityError);
    // Who waits for which key; woken by this process's writes, its siblings' and (PostgreSQL) other servers'.
    const changes = new KeyChanges(config.max_waits, (ref) => options.peers?.publish(ref));
    options.peers?.subscribe((ref) => changes.heard(ref));
    const stopHearing = records.kv.onChange((ref) =>
      ref === undefined ? changes.heardAll() : changes.heard(ref),
    );
    const argon2 = new Argon2Gate();
    const principals = new PrincipalFactory(config.roles, await records.policies.current());
    const roles = new RoleAdmin({
      policies: records.policies,
      tokens: records.tokens,
      principals,
      events,
      defaultTtl: config.default_ttl,
      maxTtl: config.max_ttl,
      now,
    });
    const refreshPolicies = () => roles.refresh();
    const currentRoot = new CurrentRoot(opened.root, records.rootToken, keyring);
    const authenticator = new Authenticator({
      tokens: records.tokens,
      argon2,
      principals,
      root: () => currentRoot.get(),
      now,
      refreshPolicies,
      limiter: new FailureLimiter({
        burst: config.auth_failures.burst,
        perSecond: config.auth_failures.per_second,
      }),
    });
    const rewrapper = new Rewrapper({
      records: records.rewrap,
      kv: records.kv,
      keyring,
      now,
      log,
      events,
    });
    const failureSummary =
      audit &&
      new FailureSummary({
        flushMs: 10_000,
        maxAddresses: 1000,
        write: (fields) => audit!.event('auth.failures', fields),
      });
    disk = audit ? watchDisk(config.audit.dir!, config.audit.min_free_bytes, log) : undefined;
    const { flood_burst: burst, flood_per_second: perSecond } = config.auth_failures;
    const tokens = new TokenService({
      store: records.tokens,
      argon2,
      principals,
      root: () => currentRoot.get(),
      defaultTtl: config.default_ttl,
      maxTtl: config.max_ttl,
      now,
      events,
      refreshPolicies,
    });
    // Roles changed by another worker or server apply here within a quarter second (at once on PostgreSQL).
    const policyFollower = followChanges({
      read: refreshPolicies,
      onChange: (listener) => store.onPoliciesChange(listener),
      everyMs: 250,
      log,
      what: 'the roles',
    });
    const login = new JwtLogin({
      principals,
      keySets: new KeySets({
        refreshMs: config.login.jwks_refresh_seconds * 1000,
        minRefreshMs: config.login.jwks_min_refresh_seconds * 1000,
        maxStaleMs: config.login.jwks_max_stale_seconds * 1000,
        timeoutMs: config.login.fetch_timeout_ms,
        maxBytes: 1024 * 1024,
        now,
      }),
      tokens,
      maxJwtBytes: config.login.max_jwt_bytes,
      leewaySeconds: config.login.leeway_seconds,
      now,
    });
    const { dir: snapshotDir, every: snapshotEvery, keep } = config.snapshot;
    const snapshots =
      snapshotDir !== null && snapshotEvery !== null
        ? { dir: snapshotDir, every: snapshotEvery, everyMs: parseDuration(snapshotEvery)!, keep }
        : null;
    const consoleSessions = new ConsoleSessions({
      records: records.consoleSessions,
      authenticator,
      root: () => currentRoot.get(),
      idleMs: config.console.idle_timeout_seconds * 1000,
      maxLifetimeMs: config.console.max_lifetime_seconds * 1000,
      now,
    });
    const metrics = new CofferMetrics({ postgres: store.shared, snapshots: snapshots !== null });
    if (snapshots) metrics.sources.newestSnapshot = () => newestSnapshotTime(snapshots.dir);
    store.observeWrites({
      written: (seconds) => metrics.storageWrite.observe(seconds),
      committed: (writes) => metrics.commitWrites.observe(writes),
    });
    metrics.sources.storage = () => store.storageGauges();
    metrics.sources.kvWaitsHeld = () => changes.size;
    const streaming = audit;
    if (streaming) metrics.sources.auditStreams = () => streaming.streams();
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
    const app = buildHttpApp({
      metrics,
      metricsText: options.serverMetrics?.(metrics) ?? (() => metrics.text()),
      failureRate: new FailureRate(
        { burst, perSecond },
        { burst: burst * 10, perSecond: perSecond * 10 },
      ),
      ...(failureSummary ? { failureSummary } : {}),
      authenticator,
      tokens,
      login,
      oidc: new OidcLogin({
        principals,
        jwtLogin: login,
        timeoutMs: config.login.fetch_timeout_ms,
        maxBytes: 1024 * 1024,
        refreshMs: config.login.jwks_refresh_seconds * 1000,
        now,
      }),
      roles,
      consoleCookies: new ConsoleCookies(consoleSessions, secureCookies),
      consoleIdleTimeoutSeconds: config.console.idle_timeout_seconds,
      kv: new KvService({
        records: records.kv,
        keyring,
        maxValueBytes: config.max_value_bytes,
        now,
        changes,
      }),
      log,
      audit,
      onIntegrityError,
      trustedProxies: config.trusted_proxies,
      tls: tls !== null,
      secureCookies,
      publicUrl: config.public_url?.replace(/\/$/, '') ?? null,
      now,
      review: new AuditReview({ store, records, auditDir: config.audit.dir!, now }),
      health: new HealthCheck({
        store,
        backend: config.storage,
        ...(audit ? { audit } : {}),
        ...(disk ? { disk } : {}),
      }),
      snapshots,
      sys: {
        rewrapper,
        operations: new KeyringOperations({
          kv: records.kv,
          keyring,
          events,
          now,
          pkcs11Pin: config.pkcs11_pin,
        }),
      },
      maxValueBytes: config.max_value_bytes,
      maxTtl: config.max_ttl,
      requestTimeoutSeconds: config.request_timeout_seconds,
      ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    });
    const { server, url } = await serveHttp(app, config, tls);
    const rotateAfter =
      config.keyring.rotate_after === null ? undefined : parseDuration(config.keyring.rotate_after);
    const autoRotation =
      rotateAfter === undefined ? undefined : startAutoRotation(keyring, rotateAfter, events, now);
    const tidy = startTidy({
      purgeTokens: (before) => records.tokens.purgeExpired(before),
      purgeConsoleSessions: () => consoleSessions.purgeEnded(),
      retentionMs: parseDuration(config.token_retention)!,
      everyMs: options.tidyEveryMs ?? 3_600_000,
      events,
      now,
    });
    const follower = followKeyring({
      store,
      keyring,
      everyMs: options.followEveryMs ?? 1000,
      log,
      afterRefresh: async () => {
        if (await currentRoot.follow()) {
          authenticator.rootChanged();
          log.info('the root token was changed by another process; using the new one');
        }
      },
    });

    return {
      server,
      url,
      store,
      records,
      keyring,
      tidy,
      async close(drainMs = 10_000) {
        // Every answer from now on closes its connection, so keep-alive clients under load let go.
        app.inFlight.drain();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Held waits answer now (304: nothing changed yet), so their connections can drain.
        changes.close();
        stopHearing();
        server.closeIdleConnections();
        const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
        await closed;
        clearTimeout(deadline);
        // A connection closed under a request does not end its work: each request still running is
        // answered (or found undelivered) and audited before the audit log closes.
        if (!(await app.inFlight.settled(IN_FLIGHT_GRACE_MS)))
          log.warn(
            { in_flight: app.inFlight.size },
            'requests still running at shutdown; closing the audit log anyway',
          );
        follower.stop();
        policyFollower.stop();
        await autoRotation?.stop();
        await tidy.stop();
        disk?.stop();
        // A rewrap in progress stops at its next batch boundary; its state is saved for a later run.
        await rewrapper.stop();
        await failureSummary?.close();
        await audit?.event('server.stop', { pid: process.pid });
        await audit?.close();
        await store.close();
      },
    };
  } catch (err) {
    disk?.stop();
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

/** How long a stop waits, once its connections are closed, for requests still being worked on. */
const IN_FLIGHT_GRACE_MS = 5_000;

function auditOpening(
  config: CofferConfig,
  { store, keyring }: OpenedStore,
  log: Logger,
  now: () => number,
): AuditOpening {
  return { config, records: store.records(keyring).audit, keyring, shared: store.shared, log, now };
}

/** What opening the store changed, recorded as operator events. */
async function recordStoreChanges(
  events: OperatorEvents,
  { rootChange: change, upgraded, replaced }: OpenedStore,
): Promise<void> {
  if (replaced)
    await events.record(
      'store.integrity_error',
      { kind: replaced.kind, key: replaced.storageKey, replaced: true },
      'INTEGRITY ERROR: a stored record failed its integrity check; it was replaced',
      'error',
    );
  if (upgraded)
    await events.record(
      'store.upgrade',
      { by: 'start-up', format: STORE_FORMAT, ...upgraded },
      'store upgraded',
    );
  if (change === 'generated')
    await events.record('root_token.generate', { by: 'start-up' }, 'root token generated');
  if (change === 'set')
    await events.record(
      'root_token.set',
      { by: 'COFFER_ROOT_TOKEN' },
      'root token set from COFFER_ROOT_TOKEN',
    );
  if (change === 'replaced')
    await events.record(
      'root_token.replace',
      { by: 'COFFER_ROOT_TOKEN' },
      'root token replaced from COFFER_ROOT_TOKEN',
    );
}
