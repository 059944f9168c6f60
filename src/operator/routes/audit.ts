/**
 * /v1/sys/audit (search the audit log), /v1/sys/audit/verify (is it intact) and /v1/sys/seal-report (is every stored version sealed): for the
 * root token and the `auditor` role (privilege `read_audit`). Neither ever returns a value or a token.
 */
import { basename } from 'node:path';
import type { Operation } from '../../api/operation.js';
import { booleanFlag, positiveInteger, queryError } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import {
  auditPage,
  auditPublicKey,
  ok,
  sealReport as sealReportSchema,
  timestamp,
  verification,
} from '../../api/response-schemas.js';
import { auditFilterOf, decodeAuditCursor, encodeAuditCursor } from '../../audit/query.js';
import type { AuditReview } from '../audit-review.js';

const MAX_LIMIT = 1000;
const DEFAULT_LIMIT = 100;

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
  login_role: {
    schema: { type: 'string' },
    description: "JWT logins (and their tokens' creations) with this login role",
  },
  issuer: {
    schema: { type: 'string' },
    description: "JWT logins with this issuer (the JWT's iss)",
  },
  subject: {
    schema: { type: 'string' },
    description: "JWT logins with this verified subject (the JWT's sub)",
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
  order: {
    schema: { type: 'string', enum: ['oldest', 'newest'], default: 'oldest' },
    description: 'oldest first (the default) or newest first; a cursor belongs to its order',
  },
};
type SearchParam = keyof typeof SEARCH_QUERY;

function bad(name: string, message: string): never {
  throw queryError(name, message);
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
          'Search the audit log (root and auditor), oldest first (or newest, with order=newest); entries never hold a value or a token',
        responses: {
          200: ok('One page of entries', auditPage),
        },
      },
    ],
    async handler(_req, res, { query: q }) {
      const filter = auditFilterOf(q, bad);
      const limit =
        q.limit === undefined ? DEFAULT_LIMIT : positiveInteger('limit', q.limit, MAX_LIMIT);
      if (q.order !== undefined && q.order !== 'oldest' && q.order !== 'newest')
        bad('order', 'must be oldest or newest');
      const newestFirst = q.order === 'newest';
      const after =
        q.cursor === undefined
          ? null
          : (decodeAuditCursor(q.cursor) ??
            bad('cursor', 'is not a cursor returned by this endpoint'));
      if (after !== null && after.newestFirst !== newestFirst)
        bad('cursor', `belongs to the ${after.newestFirst ? 'newest' : 'oldest'}-first order`);
      const page = await deps.review.search(filter, limit, after, newestFirst);
      deps.respond.json(res, 200, {
        entries: page.entries,
        next_cursor: page.next && encodeAuditCursor(page.next, newestFirst),
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
