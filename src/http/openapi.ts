/**
 * The OpenAPI 3.1 document served at GET /v1/openapi.json, built from the operations Coffer serves
 * (operation.ts): each operation's method, path, privilege, audit action, query parameters, body schema (the
 * object the server validates with) and the problems it can answer. test/http/openapi.test.ts checks every
 * documented operation against the running server.
 */
import { ERROR_CODES } from '../errors.js';
import type { Operation, OperationDoc } from './operation.js';
import type { Responder } from './respond.js';
import { json } from './response-schemas.js';

const problem = { $ref: '#/components/responses/Problem' };
const tooMany = {
  ...problem,
  description:
    'too_many_requests: wrong secrets for one token from one client address past the budget (Retry-After says when to try again)',
};

/**
 * The problems an operation answers: 400 (every operation refuses unknown query parameters); with a token
 * 401 and 429 (the budget of wrong secrets); 403 with a privilege; 413 and 415 with a body; what the
 * operation declares; and 503 audit_unavailable (its audit entry could not be written).
 */
function problems(op: Operation, doc: OperationDoc): Record<string, object> {
  const statuses = new Set([400, ...(doc.errors ?? [])]);
  if (!op.public) statuses.add(401);
  if (op.privilege) statuses.add(403);
  if (op.body) statuses.add(413).add(415);
  return Object.fromEntries([
    ...[...statuses].sort((a, b) => a - b).map((s) => [String(s), problem]),
    ...(op.public ? [] : [['429', tooMany]]),
    ['503', problem],
  ]);
}

function documented(op: Operation, doc: OperationDoc): object {
  const query = op.query ?? {};
  const names = doc.query ?? Object.keys(query);
  const parameters = [
    ...(doc.pathParams ?? []),
    ...names.map((name) => ({ name, in: 'query', ...(query as Record<string, object>)[name] })),
  ];
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(op.public ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: op.body.required, ...json(op.body.schema) } } : {}),
    responses: { ...doc.responses, ...problems(op, doc) },
    'x-coffer-action': op.action,
    ...(op.privilege ? { 'x-coffer-privilege': op.privilege } : {}),
  };
}

function paths(operations: readonly Operation[]): Record<string, Record<string, object>> {
  const out: Record<string, Record<string, object>> = {};
  for (const op of operations) {
    for (const doc of op.docs) {
      const path = doc.path ?? op.template;
      const item = out[path] ?? {};
      item[op.method.toLowerCase()] = documented(op, doc);
      out[path] = item;
    }
  }
  return out;
}

export function openApiDocument(operations: readonly Operation[]): object {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Coffer',
      version: '1',
      description:
        'Token-secured, encrypted-at-rest key-value store for configuration values and secrets. Every path answers a method it does not list with 405 method_not_allowed and an Allow header naming the ones it does; an unknown path under /v1 answers 404.',
      license: {
        name: 'UNLICENSED (proprietary; see the repository)',
        identifier: 'LicenseRef-UNLICENSED',
      },
    },
    // Relative: the server that served this document.
    servers: [{ url: '/', description: 'this Coffer server' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        Problem: {
          description: 'RFC 9457 problem',
          content: {
            'application/problem+json': {
              schema: {
                type: 'object',
                required: ['type', 'title', 'status', 'detail', 'code'],
                properties: {
                  type: { type: 'string' },
                  title: { type: 'string' },
                  status: { type: 'integer' },
                  detail: { type: 'string' },
                  code: {
                    enum: ERROR_CODES,
                  },
                  errors: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        field: { type: 'string' },
                        in: { type: 'string' },
                        message: { type: 'string' },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths: paths(operations),
  };
}

/** `operations` and, first, the one that serves their document (made once, at the first request). */
export function withOpenApiDocument(
  operations: readonly Operation[],
  respond: Responder,
): Operation[] {
  let text: string | undefined;
  const serve: Operation = {
    method: 'GET',
    template: '/v1/openapi.json',
    action: 'openapi',
    public: true,
    docs: [
      {
        operationId: 'getOpenApiDocument',
        summary: 'This document',
        responses: { 200: { description: 'OpenAPI 3.1 document' } },
      },
    ],
    handler(_req, res) {
      text ??= JSON.stringify(openApiDocument(all));
      respond.raw(res, 200, 'application/json; charset=utf-8', text);
    },
  };
  const all = [serve, ...operations];
  return all;
}
