/**
 * GET /v1/sys/health — whether this server can serve now, without a token (for load balancers and service
 * managers): 200 with the report when it can; 503 problem+json, with the same report as its `health`
 * member, when it cannot reach its storage or cannot write its audit log. operator/health.ts decides.
 */

import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';
import { healthReport, ok } from '../../api/response-schemas.js';
import { cannotServe, type HealthCheck } from '../health.js';

export interface HealthRouteDeps {
  readonly health: HealthCheck;
  readonly respond: Responder;
}

export function healthOperations({ health, respond }: HealthRouteDeps): Operation[] {
  const check: Operation = {
    method: 'GET',
    template: '/v1/sys/health',
    action: 'sys.health',
    public: true,
    docs: [
      {
        operationId: 'getHealth',
        summary:
          "Whether this server can serve now (no token): 200 with the report, or 503 storage_unavailable / audit_unavailable with the report as the problem's `health` member",
        responses: { 200: ok('This server can serve', healthReport) },
      },
    ],
    async handler(_req, res) {
      const report = await health.report();
      if (report.status === 'ok') return respond.json(res, 200, report);
      throw cannotServe(report, { health: report });
    },
  };
  return [check];
}
