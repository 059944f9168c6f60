/**
 * What a request's audit entry says beyond what every request has: the namespace, key, version or token id
 * it acted on, and its action when the route alone does not tell (a GET on a kv path reads or lists).
 * Route handlers set these as soon as they know them, so refused requests are recorded with them too.
 */
import type { Response } from 'express';

export interface AuditTarget {
  readonly action?: string;
  readonly namespace?: string;
  readonly key?: string;
  readonly version?: number;
  /** A namespace's values read in one call (?values=true): each key and the version returned. */
  readonly reads?: readonly { readonly key: string; readonly version: number }[];
  /** A write's versions destroyed by the key's max_versions, oldest first. */
  readonly pruned?: readonly number[];
  /** Versions deleted, undeleted or destroyed one by one (the action says which), oldest first. */
  readonly versions?: readonly number[];
  /** A token acted on (created, revoked), by id. */
  readonly subject_token_id?: string;
  /** A JWT login: its login role, the issuer, the verified subject, and why it was refused (never the JWT). */
  readonly login_role?: string;
  readonly issuer?: string;
  readonly subject?: string;
  readonly reason?: string;
  readonly claim?: string;
}

export function auditTarget(res: Response, target: AuditTarget): void {
  const current = res.locals.audit;
  res.locals.audit = current === undefined ? target : Object.assign(current, target);
}

/**
 * The audit target of a call on a namespace (a listing, its values, its trash): the path may have been read
 * as a key's first (`/v1/kv/payments/prod` names key `prod` of `payments` too), and no key is part of it.
 */
export function namespaceTarget(action: 'list' | 'read', namespace: string): AuditTarget {
  return { action, namespace, key: undefined };
}

export function auditTargetOf(res: Response): AuditTarget {
  return res.locals.audit ?? {};
}
