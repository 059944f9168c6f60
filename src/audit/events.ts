/**
 * The recorder of operator events (model/operator-events.ts): each is logged and appended to the audit log.
 */
import type { Logger } from 'pino';
import type { OperatorEvents } from '../model/operator-events.js';
import type { AuditLog } from './audit-log.js';

export function operatorEvents(log: Logger, audit?: AuditLog): OperatorEvents {
  return {
    async record(event, fields, message, level = 'info') {
      log[level]({ event, ...fields }, message);
      return audit ? audit.event(event, fields) : true;
    },
  };
}
