/**
 * Operator events (start-up, root-token change, key rotation, rewrap, retirement, migration, token create
 * and revoke): each is one line in the operational log and one `kind: "event"` entry in the audit log, with
 * the same fields. The fields name ids, versions and counts; never a value, a token or key material.
 */
import type { Logger } from 'pino';
import type { AuditLog } from './audit-log.js';

export type EventFields = Readonly<Record<string, unknown>>;

export interface OperatorEvents {
  /**
   * Logs the event and appends it to the audit log. Resolves true once the entry is durable; false when the
   * audit log cannot be written now (the entry stays queued and is written, in order, when it can).
   */
  record(
    event: string,
    fields: EventFields,
    message: string,
    level?: 'info' | 'error',
  ): Promise<boolean>;
}

export function operatorEvents(log: Logger, audit?: AuditLog): OperatorEvents {
  return {
    async record(event, fields, message, level = 'info') {
      log[level]({ event, ...fields }, message);
      return audit ? audit.event(event, fields) : true;
    },
  };
}
