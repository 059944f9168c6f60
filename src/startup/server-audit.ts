/**
 * The audit log of a server process as start-up opens it (open-audit.ts): recovered before anything is
 * served, with what opening the store changed recorded first.
 */
import type { Logger } from 'pino';
import type { AuditLog } from '../audit/audit-log.js';
import { operatorEvents } from '../audit/events.js';
import type { CofferConfig } from '../config/schema.js';
import { STORE_FORMAT } from '../crypto/keyring.js';
import type { OperatorEvents } from '../model/operator-events.js';
import { openAuditLog, recoverAuditLog } from './open-audit.js';
import type { OpenedStore } from './open-store.js';

export interface ServerAuditOptions {
  /** The chain's first entry: `server.start`, or `server.prepare` for the supervisor's first-start work. */
  readonly firstEvent: string;
  /** This process set up the store (see StartOptions.prepare). */
  readonly prepare: boolean;
  /** false: no audit log (only the benchmark that measures what it costs). */
  readonly enabled?: boolean;
  readonly acceptRollback?: boolean;
}

export async function openServerAudit(
  config: CofferConfig,
  opened: OpenedStore,
  log: Logger,
  now: () => number,
  options: ServerAuditOptions,
): Promise<{ audit: AuditLog | undefined; events: OperatorEvents }> {
  const { store, keyring } = opened;
  const opening = {
    config,
    records: store.records(keyring).audit,
    keyring,
    shared: store.shared,
    log,
    now,
    acceptRollback: options.acceptRollback,
  };
  const audit =
    options.enabled === false ? undefined : await openAuditLog(opening, options.firstEvent);
  if (audit) await recoverAuditLog(opening, audit, options.prepare);
  const events = operatorEvents(log, audit);
  await recordStoreChanges(events, opened);
  return { audit, events };
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
