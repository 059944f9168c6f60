/**
 * The contract a feature mounts by (Vault's logical backends): `open` builds what it serves with from what
 * the server opened and gives back how it drains and closes; `operations` declares what it serves. app.ts
 * opens each feature in src/features.ts and serves their operations; the OpenAPI document of a build
 * (features.ts) asks the same features for their operations with services that serve nothing.
 *
 * What an operation's declaration needs (schemas, limits) comes from the settings in `RouteContext`;
 * services are used by handlers only, so a declaration never reaches a service.
 */
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { AuditLog } from '../audit/audit-log.js';
import type { RootRecord } from '../auth/root-token.js';
import type { CofferConfig } from '../config/schema.js';
import type { KeyPeers } from '../kv/key-changes.js';
import type { OperatorEvents } from '../model/operator-events.js';
import type { CofferMetrics } from '../observe/metrics.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { RecordWrite } from '../store/kv-records.js';
import type { RecordIntegrityError } from '../store/record-seal.js';
import type { Records, Store } from '../store/store.js';
import type { Operation } from './operation.js';
import type { OutcomeSink } from './outcome.js';
import type { Responder } from './respond.js';

/** How a server is started (app.ts's startCoffer): what tests and the supervisor's workers change. */
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

/** What the server has opened when it opens its features. */
export interface ServerContext {
  readonly config: CofferConfig;
  readonly options: StartOptions;
  readonly log: Logger;
  readonly now: () => number;
  readonly store: Store;
  readonly records: Records;
  readonly keyring: KeyringHolder;
  /** The root token's record as the store was opened with it (startup/open-store.ts). */
  readonly root: RootRecord;
  readonly events: OperatorEvents;
  /** Undefined only in the benchmark that measures what the audit log costs. */
  readonly audit: AuditLog | undefined;
  /** Each feature adds the gauges it has (CofferMetrics.sources). */
  readonly metrics: CofferMetrics;
  /** Told of every stored record that failed its check while serving (logged and audited). */
  readonly onIntegrityError: (error: RecordIntegrityError) => void;
  /** The browser reaches Coffer over HTTPS (its own TLS, or a proxy's that COFFER_PUBLIC_URL names). */
  readonly secureCookies: boolean;
}

/** What a request is about to change, for its intent entry. */
export interface Change {
  readonly action:
    | 'write'
    | 'delete'
    | 'destroy'
    | 'undelete'
    | 'metadata'
    | 'token.create'
    | 'token.revoke';
  readonly namespace?: string;
  readonly key?: string;
  readonly subject_token_id?: string;
  /** The tokens a revocation takes with it: those the revoked token created, and theirs. */
  readonly also_revoked?: readonly string[] | undefined;
}

/**
 * Records a change's intent entry and resolves to the storage writes to commit with the change (the
 * intent's copy: audit/intent-journal.ts); throws 503 audit_unavailable when it cannot, so nothing is changed.
 */
export type RecordIntent = (res: Response, change: Change) => Promise<RecordWrite[]>;

/** Puts the caller of a request under /v1 in `res.locals.principal`, or refuses it (401, 429). */
export type Authenticate = (req: Request, res: Response) => Promise<void>;

/** What every operation's declaration and handler may use besides its feature's services. */
export interface RouteContext {
  readonly config: CofferConfig;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
  readonly now: () => number;
}

/** A feature once opened: its services, and how it stops. */
export interface Opened<S> {
  readonly services: S;
  /** At the start of a stop, before connections close (held waits answer). */
  drain?(): void;
  /** Once no request runs any more, in the reverse order of opening. */
  close?(): Promise<void>;
}

export interface Feature<S = unknown> {
  readonly name: string;
  open(ctx: ServerContext): Opened<S> | Promise<Opened<S>>;
  operations(services: S, route: RouteContext): Operation[];
}

/** A feature's operations once opened, as the server serves them. */
export interface Mounted {
  readonly operations: (route: RouteContext) => Operation[];
  readonly drain: () => void;
  readonly close: () => Promise<void>;
}

export async function mount<S>(
  feature: Feature<S>,
  ctx: ServerContext,
): Promise<Mounted & Opened<S>> {
  const opened = await feature.open(ctx);
  return {
    ...opened,
    operations: (route) => feature.operations(opened.services, route),
    drain: () => opened.drain?.(),
    close: async () => opened.close?.(),
  };
}
