/**
 * /v1/sys/audit (search the audit log), /v1/sys/audit/verify (is it intact) and /v1/sys/seal-report (is every stored version sealed): for the
 * root token and the `auditor` role (privilege `read_audit`). Neither ever returns a value or a token.
 */
import { basename } from 'node:path';
import type { Request, Response } from 'express';
import {
  type AuditFilter,
  auditTime,
  decodeAuditCursor,
  encodeAuditCursor,
  queryAudit,
} from '../../audit/query.js';
import { requirePrivilege } from '../../auth/principal.js';
import type { AuditReview } from '../../operator/audit-review.js';
import { principalOf } from '../authenticate.js';
import { booleanFlag, positiveInteger, queryError, queryOf } from '../request-parts.js';
import type { Responder } from '../respond.js';

const MAX_LIMIT = 1000;
const DEFAULT_LIMIT = 100;
const OUTCOME = /^(success|failure|[1-5][0-9][0-9]|[a-z_]{1,64})$/;
const ACTION = /^[a-z][a-z._]{0,63}\*?$/;

export interface AuditRouteDeps {
  readonly auditDir: string;
  readonly review: AuditReview;
  readonly respond: Responder;
}

function bad(name: string, message: string): never {
  throw queryError(name, message);
}

/** An ISO 8601 time as the log writes it (UTC, milliseconds), so that times compare as strings. */
function time(name: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return auditTime(text) ?? bad(name, 'must be an ISO 8601 time such as 2026-11-22T10:00:00Z');
}

function filterOf(q: Partial<Record<string, string>>): AuditFilter {
  const filter: { -readonly [K in keyof AuditFilter]: AuditFilter[K] } = {};
  const from = time('from', q.from);
  const to = time('to', q.to);
  if (from !== undefined) filter.from = from;
  if (to !== undefined) filter.to = to;
  if (from !== undefined && to !== undefined && from >= to) bad('to', 'must be later than from');
  if (q.token_id !== undefined) {
    if (!/^[A-Za-z0-9]{1,64}$/.test(q.token_id))
      bad('token_id', 'must be a token id (never a token)');
    filter.tokenId = q.token_id;
  }
  if (q.prefix !== undefined) {
    if (q.prefix === '' || q.prefix.length > 1024) bad('prefix', 'must be 1 to 1024 characters');
    filter.prefix = q.prefix;
  }
  if (q.key !== undefined) {
    if (!q.key.includes('/') || q.key.length > 4096)
      bad('key', 'must be namespace/key, e.g. payments/prod/db_password');
    filter.key = q.key;
  }
  if (q.action !== undefined) {
    if (!ACTION.test(q.action))
      bad(
        'action',
        'must be an action or event name such as read or keyring.rotate, optionally ending in *',
      );
    filter.action = q.action;
  }
  if (q.outcome !== undefined) {
    if (!OUTCOME.test(q.outcome))
      bad(
        'outcome',
        'must be success, failure, a status such as 403, or an error code such as forbidden',
      );
    filter.outcome = q.outcome;
  }
  return filter;
}

export function auditRoutes(deps: AuditRouteDeps) {
  return {
    async log(req: Request, res: Response): Promise<void> {
      requirePrivilege(principalOf(res), 'read_audit');
      const q = queryOf(req, [
        'from',
        'to',
        'token_id',
        'prefix',
        'key',
        'action',
        'outcome',
        'limit',
        'cursor',
      ]);
      const filter = filterOf(q);
      const limit =
        q.limit === undefined ? DEFAULT_LIMIT : positiveInteger('limit', q.limit, MAX_LIMIT);
      const after =
        q.cursor === undefined
          ? null
          : (decodeAuditCursor(q.cursor) ??
            bad('cursor', 'is not a cursor returned by this endpoint'));
      const page = await queryAudit(deps.auditDir, filter, limit, after);
      deps.respond.json(res, 200, {
        entries: page.entries,
        next_cursor: page.next && encodeAuditCursor(page.next),
      });
    },

    /** The offline `coffer audit verify`, for an auditor who holds no master key: the server checks. */
    async verify(req: Request, res: Response): Promise<void> {
      requirePrivilege(principalOf(res), 'read_audit');
      queryOf(req, []);
      const result = await deps.review.verify();
      // The broken file by name only: the server's paths are not the auditor's business.
      deps.respond.json(
        res,
        200,
        result.intact ? result : { ...result, file: basename(result.file) },
      );
    },

    async sealReport(req: Request, res: Response): Promise<void> {
      requirePrivilege(principalOf(res), 'read_audit');
      const verify = booleanFlag('verify', queryOf(req, ['verify']).verify);
      deps.respond.json(res, 200, await deps.review.sealReport(verify));
    },
  };
}
