/**
 * Builds each request's audit entry at the moment its response is about to be written (respond.ts):
 * time, request id, the caller's token id and role (never the token), client address, method, route
 * template (never the raw URL), namespace, key, version (or, for a namespace's values, each key and
 * version read), action, outcome and duration. No value, token or
 * request body is ever part of it.
 */
import type { Request, Response } from 'express';
import { auditTargetOf } from '../api/audit-target.js';
import { roleOf } from '../api/context.js';
import type { RecordIntent } from '../api/feature.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FailureSummary } from '../audit/failure-summary.js';
import { AppError } from '../errors.js';

/**
 * While the audit log cannot be written (and fail_open is off), a request is refused before its handler
 * runs, so nothing is changed that the log could not record. Its 503 is still queued for the log.
 */
export function refuseWhileUnrecorded(audit: AuditLog) {
  return (): void => {
    if (audit.refusing) throw unrecorded(audit);
  };
}

/**
 * Why a request cannot be recorded now: the audit log cannot be written — or, on shared storage, the
 * database that keeps its copy cannot be reached, and the request answers that, as any read would.
 */
export function unrecorded(audit: AuditLog): AppError {
  const headers = { 'Retry-After': '1' };
  return audit.storageUnavailable
    ? new AppError(
        'storage_unavailable',
        'the storage cannot be reached; try again',
        undefined,
        headers,
      )
    : new AppError('audit_unavailable', 'the audit log cannot be written', undefined, headers);
}

export function intentRecorder(
  audit: AuditLog | undefined,
  requestId: (res: Response) => string,
): RecordIntent {
  if (!audit) return async () => [];
  return async (res, change) => {
    const principal = res.locals.principal;
    const copies = await audit.intent({
      request_id: requestId(res),
      token_id: principal?.id ?? null,
      token_name: principal?.metadata.name,
      ...(res.locals.console ? { via: 'console' } : {}),
      ...change,
    });
    if (!copies) throw unrecorded(audit);
    // From here its change may commit: its answer is what happened (AuditLog.request, committed).
    res.locals.intended = true;
    return copies;
  };
}

/** A failed authentication past the flood rate goes into `summary` instead of a line of its own. */
export function requestAuditor(
  audit: AuditLog,
  summary?: FailureSummary,
  now: () => number = Date.now,
) {
  return (res: Response, status: number, requestId: string): Promise<boolean> => {
    if (summary && res.locals.summarized === true) {
      summary.add(res.locals.client ?? '', status, now());
      return Promise.resolve(true);
    }
    const req = res.req as Request;
    const principal = res.locals.principal;
    const route = res.locals.route ?? null;
    const target = auditTargetOf(res);
    const startedAt = res.locals.startedAt;
    // While the sink is failing the response will be a 503: record that, not what the handler meant to send.
    const outcome: { status: number; code: string | null; [more: string]: unknown } = audit.failing
      ? {
          status: 503,
          code: audit.storageUnavailable ? 'storage_unavailable' : 'audit_unavailable',
          ...(status === 503 ? {} : { intended_status: status }),
        }
      : { status, code: res.locals.outcomeCode ?? null };
    // The client went away before its answer (it closed the connection mid-body, say): nobody gets it.
    if (req.socket.destroyed) outcome.delivered = false;
    // Undefined fields (a request with no key, say) are left out of the JSON line.
    return audit.request(
      {
        kind: 'request',
        request_id: requestId,
        token_id: principal?.id ?? null,
        // The token's metadata name, so "who read X" needs no second lookup (absent when it has none).
        token_name: principal?.metadata.name,
        role: principal ? roleOf(principal) : null,
        // A web console session's requests are its token's, marked as the console's.
        via: res.locals.console ? 'console' : undefined,
        client: res.locals.client ?? req.socket.remoteAddress ?? null,
        method: req.method,
        route,
        action: target.action ?? res.locals.action ?? 'none',
        namespace: target.namespace,
        key: target.key,
        version: target.version,
        reads: target.reads,
        pruned: target.pruned,
        versions: target.versions,
        subject_token_id: target.subject_token_id,
        login_role: target.login_role,
        issuer: target.issuer,
        subject: target.subject,
        reason: target.reason,
        claim: target.claim,
        outcome,
        duration_ms:
          startedAt === undefined
            ? null
            : Math.round((performance.now() - startedAt) * 1000) / 1000,
      },
      res.locals.intended === true,
    );
  };
}
