/**
 * /v1/sys/audit (search the audit log), /v1/sys/audit/verify (is it intact) and /v1/sys/seal-report (is every stored version sealed): for the
 * root token and the `auditor` role (privilege `read_audit`). Neither ever returns a value or a token.
 */
import { basename } from 'node:path';
import type { Operation } from '../../api/operation.js';
import { flag, integer, type QueryParam, text } from '../../api/query-params.js';
import { queryError } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import {
  auditChains,
  auditPage,
  auditPublicKey,
  ok,
  sealReport as sealReportSchema,
  verification,
} from '../../api/response-schemas.js';
import { auditFilterOf, decodeAuditCursor, encodeAuditCursor } from '../../audit/query.js';
import {
  AUDIT_FILTER_NAMES,
  AUDIT_FILTERS,
  type AuditFilterDeclaration,
  type AuditFilterName,
} from '../../model/audit-filters.js';
import type { AuditReview } from '../audit-review.js';
import type { ChainReport } from '../chain-report.js';

const MAX_LIMIT = 1000;
const DEFAULT_LIMIT = 100;

export interface AuditRouteDeps {
  readonly review: AuditReview;
  readonly chains: ChainReport;
  readonly respond: Responder;
}

const SEARCH_QUERY = {
  ...auditFilterParams(),
  limit: integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }),
  cursor: text({ description: 'next_cursor from the previous page' }),
  order: text({
    enum: ['oldest', 'newest'],
    default: 'oldest',
    description: 'oldest first (the default) or newest first; a cursor belongs to its order',
  }),
};

/** The search's filters as query parameters, from their one declaration (model/audit-filters.ts). */
function auditFilterParams(): { readonly [K in AuditFilterName]: QueryParam<string> } {
  return Object.fromEntries(
    AUDIT_FILTER_NAMES.map((name) => {
      const filter: AuditFilterDeclaration = AUDIT_FILTERS[name];
      return [
        name,
        text({
          description: filter.description,
          ...(filter.time ? { format: 'date-time' as const } : {}),
        }),
      ];
    }),
  ) as { readonly [K in AuditFilterName]: QueryParam<string> };
}

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

  const search: Operation<typeof SEARCH_QUERY> = {
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
      const limit = q.limit ?? DEFAULT_LIMIT;
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

  const sealReportQuery = {
    verify: flag({ description: 'also open every record in memory; no value is returned' }),
  };
  const sealReport: Operation<typeof sealReportQuery> = {
    method: 'GET',
    template: '/v1/sys/seal-report',
    action: 'audit.seal_report',
    privilege: 'read_audit',
    query: sealReportQuery,
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
      deps.respond.json(res, 200, await deps.review.sealReport(query.verify === true));
    },
  };

  /** The store's register of audit chains: who wrote each, how it ended, and the count's gaps. */
  const chains: Operation = {
    method: 'GET',
    template: '/v1/sys/audit/chains',
    action: 'audit.chains',
    privilege: 'read_audit',
    docs: [
      {
        operationId: 'listAuditChains',
        summary:
          "The store's register of audit chains (root and auditor): each chain's writer, whether it is open or how it ended, its newest checkpoint, and ordinals the count has but no record holds",
        responses: {
          200: ok('The register', auditChains),
        },
      },
    ],
    async handler(_req, res) {
      deps.respond.json(res, 200, await deps.chains.register());
    },
  };

  return [search, verify, publicKey, chains, sealReport] as Operation[];
}
