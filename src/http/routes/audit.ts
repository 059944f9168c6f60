/**
 * /v1/sys/audit (search the audit log), /v1/sys/audit/verify (is it intact) and /v1/sys/seal-report (is every stored version sealed): for the
 * root token and the `auditor` role (privilege `read_audit`). Neither ever returns a value or a token.
 */
import { basename } from 'node:path';
import {
  type AuditFilter,
  auditTime,
  decodeAuditCursor,
  encodeAuditCursor,
} from '../../audit/query.js';
import type { AuditReview } from '../../operator/audit-review.js';
import type { Operation } from '../operation.js';
import { booleanFlag, positiveInteger, queryError } from '../request-parts.js';
import type { Responder } from '../respond.js';
import {
  auditPage,
  auditPublicKey,
  ok,
  sealReport as sealReportSchema,
  timestamp,
  verification,
} from '../response-schemas.js';

const MAX_LIMIT = 1000;
const DEFAULT_LIMIT = 100;
const OUTCOME = /^(success|failure|[1-5][0-9][0-9]|[a-z_]{1,64})$/;
const ACTION = /^[a-z][a-z._]{0,63}\*?$/;

export interface AuditRouteDeps {
  readonly review: AuditReview;
  readonly respond: Responder;
}

const SEARCH_QUERY = {
  from: { schema: timestamp, description: 'inclusive' },
  to: { schema: timestamp, description: 'exclusive' },
  token_id: {
    schema: { type: 'string' },
    description: 'the caller, the token acted on, or who ran an operator event',
  },
  token_name: {
    schema: { type: 'string' },
    description: "exactly this token name (the caller's metadata.name)",
  },
  request_id: {
    schema: { type: 'string' },
    description: "one request's entries: the X-Request-Id it was answered with",
  },
  prefix: { schema: { type: 'string' }, description: 'prefix of namespace/key' },
  key: { schema: { type: 'string' }, description: 'exactly this namespace/key' },
  action: {
    schema: { type: 'string' },
    description: 'an action or event name; a trailing * matches a prefix',
  },
  outcome: {
    schema: { type: 'string' },
    description: 'success, failure, a status (403) or an error code (forbidden)',
  },
  limit: { schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
  cursor: { schema: { type: 'string' }, description: 'next_cursor from the previous page' },
};
type SearchParam = keyof typeof SEARCH_QUERY;

function bad(name: string, message: string): never {
  throw queryError(name, message);
}

/** An ISO 8601 time as the log writes it (UTC, milliseconds), so that times compare as strings. */
function time(name: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return auditTime(text) ?? bad(name, 'must be an ISO 8601 time such as 2026-11-22T10:00:00Z');
}

function filterOf(q: Partial<Record<SearchParam, string>>): AuditFilter {
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
  if (q.token_name !== undefined) {
    if (q.token_name === '' || q.token_name.length > 128)
      bad('token_name', 'must be 1 to 128 characters, as a token name');
    filter.tokenName = q.token_name;
  }
  if (q.request_id !== undefined) {
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(q.request_id))
      bad('request_id', 'must be a request id, as X-Request-Id gives it');
    filter.requestId = q.request_id;
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

export function auditOperations(deps: AuditRouteDeps): Operation[] {
  /** The public key that checks the checkpoints' signatures: public, so an auditor can keep it apart. */
  const publicKey: Operation = {
    method: 'GET',
    template: '/v1/sys/audit/public-key',
    action: 'audit.public_key',
    public: true,
    docs: [
      {
        operationId: 'getAuditPublicKey',
        summary:
          "The Ed25519 public key that signs the audit log's checkpoints (no token): `coffer audit verify --public-key` checks the log with it and no secret",
        responses: {
          200: ok('The public key', auditPublicKey),
        },
      },
    ],
    handler(_req, res) {
      deps.respond.json(res, 200, deps.review.publicKey());
    },
  };

  const search: Operation<SearchParam> = {
    method: 'GET',
    template: '/v1/sys/audit',
    action: 'audit.read',
    privilege: 'read_audit',
    query: SEARCH_QUERY,
    docs: [
      {
        operationId: 'searchAuditLog',
        summary:
          'Search the audit log (root and auditor), oldest first; entries never hold a value or a token',
        responses: {
          200: ok('One page of entries', auditPage),
        },
      },
    ],
    async handler(_req, res, { query: q }) {
      const filter = filterOf(q);
      const limit =
        q.limit === undefined ? DEFAULT_LIMIT : positiveInteger('limit', q.limit, MAX_LIMIT);
      const after =
        q.cursor === undefined
          ? null
          : (decodeAuditCursor(q.cursor) ??
            bad('cursor', 'is not a cursor returned by this endpoint'));
      const page = await deps.review.search(filter, limit, after);
      deps.respond.json(res, 200, {
        entries: page.entries,
        next_cursor: page.next && encodeAuditCursor(page.next),
      });
    },
  };

  /** The offline `coffer audit verify`, for an auditor who holds no master key: the server checks. */
  const verify: Operation = {
    method: 'GET',
    template: '/v1/sys/audit/verify',
    action: 'audit.verify',
    privilege: 'read_audit',
    docs: [
      {
        operationId: 'verifyAuditLog',
        summary:
          'Check every audit chain and checkpoint, and which stored versions the log names (root and auditor)',
        responses: {
          200: ok(
            'intact: entries, chains, files, first and last time, coverage; or broken: the first broken entry (file, line, seq) and why',
            verification,
          ),
        },
      },
    ],
    async handler(_req, res) {
      const result = await deps.review.verify();
      const { public_key } = deps.review.publicKey();
      // The broken file by name only: the server's paths are not the auditor's business.
      deps.respond.json(
        res,
        200,
        result.intact
          ? { ...result, public_key }
          : { ...result, file: basename(result.file), public_key },
      );
    },
  };

  const sealReport: Operation<'verify'> = {
    method: 'GET',
    template: '/v1/sys/seal-report',
    action: 'audit.seal_report',
    privilege: 'read_audit',
    query: {
      verify: {
        schema: { type: 'boolean' },
        description: 'also open every record in memory; no value is returned',
      },
    },
    docs: [
      {
        operationId: 'getSealReport',
        summary:
          'Whether every stored version is sealed, read from its structure without decrypting (root and auditor)',
        responses: {
          200: ok('The report', sealReportSchema),
        },
      },
    ],
    async handler(_req, res, { query }) {
      const verify = booleanFlag('verify', query.verify);
      deps.respond.json(res, 200, await deps.review.sealReport(verify));
    },
  };

  return [search, verify, publicKey, sealReport] as Operation[];
}
