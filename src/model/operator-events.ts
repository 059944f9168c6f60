/**
 * Operator events (start-up, root-token change, key rotation, rewrap, retirement, migration, token create
 * and revoke), as the services that perform them record them: each is one line in the operational log and
 * one `kind: "event"` entry in the audit log, with the same fields (audit/events.ts makes the recorder).
 * The fields name ids, versions and counts; never a value, a token or key material.
 */

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
