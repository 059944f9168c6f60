/**
 * The composition root: the only place Coffer's objects are constructed and wired. Nothing here is
 * module-level state, so two apps can run in one process (as the tests do).
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import {
  type AddressInfo,
  createServer as createNetServer,
  type Server as NetServer,
} from 'node:net';
import type { Duplex } from 'node:stream';
import { type Logger, pino } from 'pino';
import { AuditLog } from './audit/audit-log.js';
import { MirroredSink } from './audit/database-copy.js';
import { type DiskWatch, watchDisk } from './audit/disk-watch.js';
import { operatorEvents } from './audit/events.js';
import { FailureSummary } from './audit/failure-summary.js';
import { FileSink } from './audit/file-sink.js';
import { IntentJournal } from './audit/intent-journal.js';
import { recoverIntents } from './audit/intent-recovery.js';
import { AuditRegistry } from './audit/registry.js';
import { StdoutSink } from './audit/stdout-sink.js';
import { repairTornTails } from './audit/tail-repair.js';
import { AuditWriter } from './audit/writer.js';
import { Argon2Gate } from './auth/argon2-gate.js';
import { Authenticator } from './auth/authenticator.js';
import { FailureLimiter } from './auth/failure-limiter.js';
import { FailureRate } from './auth/failure-rate.js';
import { PrincipalFactory } from './auth/principal.js';
import { roleTable } from './auth/roles.js';
import {
  CurrentRoot,
  type EstablishedRoot,
  establishRootToken,
  NewStoreRoot,
  type RootRecord,
  readRootToken,
} from './auth/root-token.js';
import { TokenService } from './auth/token-service.js';
import { TokenStore } from './auth/token-store.js';
import type { CofferConfig } from './config/schema.js';
import { sodiumReady } from './crypto/aead.js';
import { STORE_FORMAT } from './crypto/keyring.js';
import { randomBase62 } from './crypto/random.js';
import { ensureDirectory } from './directories.js';
import { ConfigError, invalid } from './errors.js';
import { buildHttpApp } from './http/http-app.js';
import type { OutcomeSink } from './http/outcome.js';
import { problemBody } from './http/problem.js';
import { KeyProviderError } from './keys/key-provider.js';
import { MissingMasterKeyError } from './keys/local-provider.js';
import {
  type OpenedProvider,
  openKeyProvider,
  type ProviderConfig,
  providerConfig,
  settingsOf,
} from './keys/registry.js';
import { KvService } from './kv/kv-service.js';
import type { OperatorEvents } from './model/operator-events.js';
import { AuditReview } from './operator/audit-review.js';
import { parseDuration, startAutoRotation } from './operator/auto-rotate.js';
import { HealthCheck } from './operator/health.js';
import { KeyringOperations } from './operator/keyring-operations.js';
import { Rewrapper } from './operator/rewrap.js';
import { hasChangeFeed, type StorageBackend } from './storage/backend.js';
import { openStorage } from './storage/registry.js';
import { KeyringHolder, storedKeyDescription } from './store/keyring-store.js';
import { RecordIntegrityError, type RecordSeal } from './store/record-seal.js';
import { type UpgradeResult, upgradeStore } from './store/upgrade.js';

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
  /**
   * false runs without an audit log. Only for the benchmark that measures what the audit log costs
   * (bench/direct-server.ts); no configuration setting or variable reaches it.
   */
  readonly audit?: boolean;
}

export interface RunningCoffer {
  readonly server: Server;
  /** e.g. http://127.0.0.1:8750 */
  readonly url: string;
  readonly storage: StorageBackend;
  readonly keyring: KeyringHolder;
  /** Stops accepting connections, lets requests in flight finish (up to `drainMs`), closes storage. */
  close(drainMs?: number): Promise<void>;
}

interface OpenedStore {
  readonly storage: StorageBackend;
  readonly keyring: KeyringHolder;
  readonly root: RootRecord;
  /** How this process changed the root token, for the audit log. */
  readonly rootChange: EstablishedRoot['change'];
  /** What this process's store upgrade did, for the audit log; null when there was none. */
  readonly upgraded: UpgradeResult | null;
  /** A keyring generation record that failed its check and was replaced, for the audit log. */
  readonly replaced: RecordIntegrityError | null;
}

async function openStore(
  config: CofferConfig,
  log: Logger,
  now: () => number,
  options: StartOptions,
): Promise<OpenedStore> {
  await sodiumReady();
  ensureDirectory(config.data_dir, 'COFFER_DATA_DIR');
  ensureDirectory(config.audit.dir!, 'COFFER_AUDIT_DIR');
  const storage = await openStorage(config);
  try {
    // A master key is made only for a store that does not exist yet: never next to an existing store whose
    // own key file is missing (a new key would not open it, and could be backed up in its place).
    const existing = await storedKeyDescription(storage);
    let opened: OpenedProvider;
    try {
      opened = await openKeyProvider(config, {
        createKey: existing === undefined && options.prepare !== false,
      });
    } catch (err) {
      if (err instanceof MissingMasterKeyError && existing !== undefined) {
        throw new KeyProviderError(
          err.setting,
          `${err.message}; the store in ${config.data_dir} needs its own key, ${existing ?? 'the one it was created with'}: restore that file from your backup or configure that key (Coffer creates a key only for a new store)`,
        );
      }
      throw err;
    }
    if (opened.notice) log.warn(opened.notice);
    else if (existing === undefined)
      log.warn(
        `${config.data_dir} holds no store yet, but the master key already exists: creating a new store and root token (check COFFER_DATA_DIR if you meant an existing store)`,
      );
    const reopen = async (target: ProviderConfig) =>
      (await openKeyProvider(settingsOf(target, config.pkcs11_pin))).provider;
    const argon2 = new Argon2Gate();
    const newRoot =
      options.prepare === false ? undefined : new NewStoreRoot(argon2, config.root_token, now());
    const {
      holder: keyring,
      created,
      replaced = null,
    } = await KeyringHolder.open(
      storage,
      { provider: opened.provider, config: providerConfig(config) },
      now(),
      { reopen, ...(newRoot ? { newStoreRoot: newRoot.seal } : {}) },
    );
    if (created) log.info('created a new keyring, wrapped by %s', opened.provider.description);
    if (replaced)
      log.error(
        { kind: replaced.kind, key: replaced.storageKey },
        'INTEGRITY ERROR: the keyring generation record failed its integrity check; replaced by a new generation',
      );
    if (options.prepare === false) {
      if (keyring.current().storeFormat < STORE_FORMAT)
        throw new Error(
          'the store is not upgraded yet; it is upgraded by the process that prepares the store',
        );
      const root = await readRootToken(storage, keyring);
      if (!root)
        throw new Error(
          'the store has no root token yet; it is set up by the process that prepares the store',
        );
      return { storage, keyring, root, rootChange: null, upgraded: null, replaced };
    }
    const upgraded = await upgradeStore(storage, keyring, log);
    // A new store got its root token with its keyring; an existing one keeps or replaces its own.
    const root =
      (created ? newRoot?.established : undefined) ??
      (await establishRootToken(storage, keyring, argon2, config.root_token, now()));
    if (root.generated) options.onGeneratedRootToken?.(root.generated);
    return {
      storage,
      keyring,
      root: root.record,
      rootChange: root.change,
      upgraded,
      replaced,
    };
  } catch (err) {
    await storage.close();
    if (err instanceof RecordIntegrityError && err.kind === 'root-token') {
      throw new ConfigError(
        'COFFER_ROOT_TOKEN',
        `${err.message} and is not used; start once with COFFER_ROOT_TOKEN set to a new root token (at least 32 characters, e.g. openssl rand -base64 32) to replace it`,
      );
    }
    throw err;
  }
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
  const store = await openStore(config, log, now, options);
  const { storage, keyring } = store;
  try {
    const audit = await openAuditLog(config, storage, keyring, log, now, 'server.prepare');
    await recoverJournaledIntents(storage, keyring.recordSeal, config, audit, log);
    await recordStoreChanges(operatorEvents(log, audit), store);
    await audit.close();
  } finally {
    await storage.close();
  }
}

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

export async function startCoffer(
  config: CofferConfig,
  options: StartOptions = {},
): Promise<RunningCoffer> {
  const log = options.log ?? pino({ level: config.log_level });
  const now = options.now ?? Date.now;
  const store = await openStore(config, log, now, options);
  const { storage, keyring, root } = store;
  const seal = keyring.recordSeal;
  let opened: AuditLog | undefined;
  let disk: DiskWatch | undefined;
  try {
    const audit =
      options.audit === false
        ? undefined
        : await openAuditLog(config, storage, keyring, log, now, 'server.start');
    opened = audit;
    if (audit && options.prepare !== false)
      await recoverJournaledIntents(storage, seal, config, audit, log);
    const events = operatorEvents(log, audit);
    await recordStoreChanges(events, store);
    const argon2 = new Argon2Gate();
    const principals = new PrincipalFactory(roleTable(config.roles));
    // Logged and audited with the record's kind and storage key, never its bytes.
    const tokenStore = new TokenStore(storage, seal, keyring, (err) => {
      void events
        .record(
          'store.integrity_error',
          { kind: err.kind, key: err.storageKey },
          'INTEGRITY ERROR: a stored record failed its integrity check; it was not used',
          'error',
        )
        .catch(() => undefined);
    });
    const currentRoot = new CurrentRoot(root, storage, keyring);
    const authenticator = new Authenticator({
      tokens: tokenStore,
      argon2,
      principals,
      root: () => currentRoot.get(),
      now,
      limiter: new FailureLimiter({
        burst: config.auth_failures.burst,
        perSecond: config.auth_failures.per_second,
      }),
    });
    const tokens = new TokenService({
      store: tokenStore,
      argon2,
      principals,
      root: () => currentRoot.get(),
      defaultTtl: config.default_ttl,
      maxTtl: config.max_ttl,
      now,
      events,
    });
    const kv = new KvService({
      storage,
      keyring,
      seal,
      maxValueBytes: config.max_value_bytes,
      now,
      onIntegrityError: (where, reason) =>
        log.error(
          { ...where, reason },
          'INTEGRITY ERROR: a stored record failed to open or verify; it was not returned',
        ),
    });
    const rewrapper = new Rewrapper({ storage, keyring, now, log, events });
    const failureSummary =
      audit &&
      new FailureSummary({
        flushMs: 10_000,
        maxAddresses: 1000,
        write: (fields) => audit.event('auth.failures', fields),
      });
    disk = audit ? watchDisk(config.audit.dir!, config.audit.min_free_bytes, log) : undefined;
    const tls = config.tls.cert !== null && config.tls.key !== null;
    const { flood_burst: burst, flood_per_second: perSecond } = config.auth_failures;
    const failureRate = new FailureRate(
      { burst, perSecond },
      { burst: burst * 10, perSecond: perSecond * 10 },
    );
    const app = buildHttpApp({
      failureRate,
      ...(failureSummary ? { failureSummary } : {}),
      authenticator,
      tokens,
      kv,
      log,
      audit,
      trustedProxies: config.trusted_proxies,
      tls,
      now,
      review: new AuditReview({ storage, keyring, auditDir: config.audit.dir!, now }),
      health: new HealthCheck({
        storage,
        backend: config.storage,
        ...(audit ? { audit } : {}),
        ...(disk ? { disk } : {}),
      }),
      sys: {
        rewrapper,
        operations: new KeyringOperations({
          storage,
          keyring,
          events,
          now,
          pkcs11Pin: config.pkcs11_pin,
        }),
      },
      maxValueBytes: config.max_value_bytes,
      maxTtl: config.max_ttl,
      ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    });

    // Time limits are checked every second (Node's default: every 30 s).
    const limits = { connectionsCheckingInterval: 1000 };
    const server = tls
      ? createHttpsServer(
          { ...limits, cert: readFileSync(config.tls.cert!), key: readFileSync(config.tls.key!) },
          app,
        )
      : createHttpServer(limits, app);
    // A slow client holds a connection at most this long (Node's default is five minutes).
    server.requestTimeout = config.request_timeout_seconds * 1000;
    server.headersTimeout = Math.min(10_000, server.requestTimeout);
    server.on('clientError', answerClientError);
    await listen(server, config);
    const address = server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const url = `${tls ? 'https' : 'http'}://${host}:${address.port}`;
    const rotateAfter =
      config.keyring.rotate_after === null ? undefined : parseDuration(config.keyring.rotate_after);
    const autoRotation =
      rotateAfter === undefined ? undefined : startAutoRotation(keyring, rotateAfter, events, now);
    // Keyring changes by other processes (rotations, revocations, a new root token) are loaded at once
    // where the storage announces them (PostgreSQL's NOTIFY), and within a second in any case: one read of
    // the generation record when nothing changed.
    // One at a time: a notification arriving during a check makes one more check after it.
    let following: Promise<void> | null = null;
    let again = false;
    const followKeyring = (): void => {
      if (following) {
        again = true;
        return;
      }
      following = keyring
        .refresh()
        .then(async () => {
          if (await currentRoot.follow()) {
            authenticator.rootChanged();
            log.info('the root token was changed by another process; using the new one');
          }
        })
        .catch((err: unknown) =>
          log.error({ err: { message: (err as Error).message } }, 'could not reload the keyring'),
        )
        .finally(() => {
          following = null;
          if (again) {
            again = false;
            followKeyring();
          }
        });
    };
    const follow = setInterval(followKeyring, options.followEveryMs ?? 1000);
    follow.unref();
    const unwatch = hasChangeFeed(storage) ? storage.onChange(followKeyring) : undefined;

    return {
      server,
      url,
      storage,
      keyring,
      async close(drainMs = 10_000) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
        await closed;
        clearTimeout(deadline);
        clearInterval(follow);
        unwatch?.();
        await autoRotation?.stop();
        disk?.stop();
        // A rewrap in progress stops at its next batch boundary; its state is saved for a later run.
        await rewrapper.stop();
        await failureSummary?.close();
        await audit?.event('server.stop', { pid: process.pid });
        await audit?.close();
        await storage.close();
      },
    };
  } catch (err) {
    disk?.stop();
    if (opened) {
      await opened.event('server.start_failed', {
        pid: process.pid,
        reason: (err as Error).message,
      });
      await opened.close();
    }
    await storage.close();
    throw err;
  }
}

const UNPARSABLE = problemBody(
  invalid(
    'the request is not valid HTTP/1.1 (characters outside ASCII in the URL must be percent-encoded as UTF-8)',
    [{ field: '', in: 'request', message: 'not valid HTTP/1.1' }],
  ),
);

/** Requests Node's parser refuses, answered as problem+json like everything else (Node sends a bare 400). */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy();
  const [status, title, body] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', '']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', '']
        : [400, 'Bad Request', UNPARSABLE];
  const head = [
    `HTTP/1.1 ${status} ${title}`,
    'Connection: close',
    'Cache-Control: no-store',
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  if (body) head.push('Content-Type: application/problem+json');
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

/** Listens, or throws a ConfigError naming COFFER_PORT or COFFER_HOST. */
async function listen(
  server: Server | NetServer,
  config: Pick<CofferConfig, 'host' | 'port'>,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(
          new ConfigError(
            'COFFER_PORT',
            `port ${config.port} on ${config.host} is already in use; stop what uses it or choose another port`,
          ),
        );
      else if (err.code === 'EACCES')
        reject(
          new ConfigError(
            'COFFER_PORT',
            `this user may not listen on port ${config.port} (ports below 1024 need privileges); choose a port from 1024`,
          ),
        );
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
        reject(new ConfigError('COFFER_HOST', `${config.host} is not an address of this machine`));
      else reject(err);
    });
    server.listen(config.port, config.host, () => resolve());
  });
}

/**
 * Whether this process may listen on the configured address: checked before the store is prepared, so a
 * port in use stops start-up with one line before anything is created. (Port 0 is always free.)
 */
export async function checkListenable(config: Pick<CofferConfig, 'host' | 'port'>): Promise<void> {
  if (config.port === 0) return;
  const probe = createNetServer();
  await listen(probe, config);
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * How old an intent copy must be before a starting server puts it back into the log on shared storage: its
 * own server deletes it within about a second of syncing the line, so an older one was left by a server
 * that stopped (or cannot write its log).
 */
const SHARED_INTENT_GRACE_MS = 60_000;

/** Puts intents missing from the audit files (a power loss, or a kill as a change committed) back into the log (audit/intent-recovery.ts). */
async function recoverJournaledIntents(
  storage: StorageBackend,
  seal: RecordSeal,
  config: CofferConfig,
  audit: AuditLog,
  log: Logger,
): Promise<void> {
  for (const torn of repairTornTails(config.audit.dir!)) {
    await audit.event('audit.tail_repaired', { ...torn });
    log.warn(
      { event: 'audit.tail_repaired', ...torn },
      'an audit file ended in part of a line (a process killed while writing it): cut back to its last whole line',
    );
  }
  // On shared storage other servers are writing intents now: their newest copies are theirs to clean up.
  const { found, recovered } = await recoverIntents(storage, seal, config.audit.dir!, audit, {
    ...(storage.remote ? { leaveYoungerThanMs: SHARED_INTENT_GRACE_MS } : {}),
  });
  if (recovered > 0) {
    log.warn(
      { event: 'audit.intent_recovered', recovered },
      '%d intent entries missing from the audit files (a power loss, a machine crash, or a process killed as it committed) were put back into the log from the store',
      recovered,
    );
  } else if (found > 0)
    log.info({ found }, 'intent copies left by a stopped process were all in the audit files');
}

/** This process's audit chain, recorded in the store, with its first entry (`firstEvent`) durable. */
export async function openAuditLog(
  config: CofferConfig,
  storage: StorageBackend,
  keyring: KeyringHolder,
  log: Logger,
  now: () => number,
  firstEvent: string,
): Promise<AuditLog> {
  const seal = keyring.recordSeal;
  const registry = new AuditRegistry(storage, seal);
  const chain = `${now().toString(36)}-${process.pid}-${randomBase62(8)}`;
  await registry.started(chain, now());
  const journal = new IntentJournal(storage, chain, seal);
  const files = new FileSink({
    dir: config.audit.dir!,
    chain,
    maxFileBytes: config.audit.max_file_bytes,
  });
  const writer = new AuditWriter({
    // On shared storage the chain is kept in the store too, for every server and host to read.
    sink: storage.remote ? new MirroredSink(files, storage, seal, chain) : files,
    ...(config.audit.stdout ? { copies: [new StdoutSink()] } : {}),
    chain,
    key: () => keyring.current().auditKey(),
    registry,
    checkpointEvery: config.audit.checkpoint_every,
    checkpointMs: config.audit.checkpoint_seconds * 1000,
    now,
    syncMs: config.audit.sync_ms,
    onSynced: (seq) => journal.synced(seq),
  });
  const audit = new AuditLog({
    writer,
    failOpen: config.audit.fail_open,
    log,
    syncEveryEntry: config.audit.sync_every_entry,
    journal,
  });
  if (
    !(await audit.event(firstEvent, { pid: process.pid, provider: keyring.wrapping().description }))
  ) {
    throw new Error(
      `the audit log cannot be written in ${config.audit.dir}; Coffer does not serve unrecorded requests (audit.fail_open is false)`,
    );
  }
  return audit;
}
