/**
 * The OpenAPI 3.1 document served at GET /v1/openapi.json, built from the operations Coffer serves
 * (operation.ts): each operation's method, path, privilege, audit action, query parameters, body schema (the
 * object the server validates with) and the problems it can answer. test/http/openapi.test.ts checks every
 * documented operation against the running server.
 */
import { checksStrayBody, type Operation, type OperationDoc } from './operation.js';
import type { Responder } from './respond.js';
import { json, NAMED_SCHEMAS, ok } from './response-schemas.js';

const problem = { $ref: '#/components/responses/Problem' };
/** The problem responses that carry a header of their own, by status. */
const PROBLEM_WITH: Record<string, { $ref: string }> = {
  '401': { $ref: '#/components/responses/Unauthorized' },
  '405': { $ref: '#/components/responses/MethodNotAllowed' },
  '500': { $ref: '#/components/responses/ServerError' },
  '429': { $ref: '#/components/responses/TooManyRequests' },
  '503': { $ref: '#/components/responses/Unavailable' },
};

/** Headers on every answer. */
const COMMON_HEADERS = {
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
  'Cache-Control': { $ref: '#/components/headers/Cache-Control' },
};

const headerSchemas = {
  'X-Request-Id': {
    required: true,
    description:
      "the id of this request: its audit entry (and a change's intent entry) carry the same",
    schema: { type: 'string' },
  },
  'Cache-Control': {
    required: true,
    description: 'nothing Coffer answers is cached',
    schema: { const: 'no-store' },
  },
  'Retry-After': {
    required: true,
    description: 'seconds to wait before trying again',
    schema: { type: 'integer' },
  },
  'WWW-Authenticate': {
    required: true,
    description: 'the challenge: a bearer token (`Bearer realm="coffer", error="invalid_token"`)',
    schema: { type: 'string' },
  },
  Allow: {
    required: true,
    description: 'the methods the path answers',
    schema: { type: 'string' },
  },
};

const ref = (name: keyof typeof headerSchemas) => ({ $ref: `#/components/headers/${name}` });

/** A problem response with the common headers and `more`. */
function problemResponse(description: string, more: Record<string, object> = {}): object {
  return {
    description,
    headers: { ...COMMON_HEADERS, ...more },
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

/** `response` with the headers every answer carries added to its own. */
function withCommonHeaders(response: object): object {
  if ('$ref' in response) return response;
  const own = (response as { headers?: Record<string, object> }).headers ?? {};
  return { ...response, headers: { ...COMMON_HEADERS, ...own } };
}

/**
 * The problems an operation answers: 400 (every operation refuses unknown query parameters); 405 (another
 * method on its path); 408 and 431 (a request not received in time, or whose headers are over 16 KiB: answered
 * before any request exists, so with no audit entry; its X-Request-Id names the server log's line); 500 (a stored record failed its check, or a fault); with a token 401 and 429 (the budget of wrong secrets, or verifications queued);
 * 403 with a privilege; 413 and 415 with a body, or where a stray body is checked; what the operation declares; and 503 (its audit entry
 * could not be written, or the storage cannot be reached).
 */
function problems(op: Operation, doc: OperationDoc): Record<string, object> {
  const statuses = new Set([400, 405, 408, 431, 500, 503, ...(doc.errors ?? [])]);
  if (!op.public) statuses.add(401).add(429);
  if (op.privilege) statuses.add(403);
  if (op.body || checksStrayBody(op)) statuses.add(413).add(415);
  return Object.fromEntries(
    [...statuses].sort((a, b) => a - b).map((s) => [String(s), PROBLEM_WITH[String(s)] ?? problem]),
  );
}

function documented(op: Operation, doc: OperationDoc): object {
  const query = op.query ?? {};
  const names = doc.query ?? Object.keys(query);
  const parameters = [
    ...(doc.pathParams ?? []),
    ...names.map((name) => {
      // What a value is told when refused, and how it is read, are the server's: not documented.
      const { schema, description } = query[name]!;
      return { name, in: 'query', schema, ...(description === undefined ? {} : { description }) };
    }),
  ];
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(op.public ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: op.body.required, ...json(op.body.schema) } } : {}),
    responses: {
      ...Object.fromEntries(
        Object.entries(doc.responses).map(([status, response]) => [
          status,
          withCommonHeaders(response),
        ]),
      ),
      ...problems(op, doc),
    },
    'x-coffer-action': op.action,
    ...(op.privilege ? { 'x-coffer-privilege': op.privilege } : {}),
  };
}

const nameOf = new Map<object, string>(Object.entries(NAMED_SCHEMAS).map(([n, s]) => [s, n]));

/**
 * A plain copy of `value` (a schema, or a part of the document holding schemas) in which every named shape
 * below the top is a $ref to its entry in components.schemas.
 */
function referenced(value: unknown, top = true): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const name = nameOf.get(value);
  if (name !== undefined && !top) return { $ref: `#/components/schemas/${name}` };
  if (Array.isArray(value)) return value.map((v) => referenced(v, false));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, referenced(v, false)]));
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
        'Token-secured, encrypted-at-rest key-value store for configuration values and secrets. Every path answers a method it does not list with 405 method_not_allowed and an Allow header naming the ones it does; an unknown path under /v1 answers 404, and a path with a "." or ".." segment (as sent or percent-encoded) 400 invalid_request.',
      license: {
        name: 'UNLICENSED (proprietary; see the repository)',
        identifier: 'LicenseRef-UNLICENSED',
      },
    },
    // Relative: the server that served this document.
    servers: [{ url: '/', description: 'this Coffer server' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      headers: headerSchemas,
      responses: {
        Problem: problemResponse('RFC 9457 problem'),
        Unauthorized: problemResponse('unauthorized: no token, or one that is not valid', {
          'WWW-Authenticate': ref('WWW-Authenticate'),
        }),
        MethodNotAllowed: problemResponse(
          'method_not_allowed: the path does not answer this method (Allow names those it does)',
          { Allow: ref('Allow') },
        ),
        ServerError: problemResponse(
          'integrity_error: a stored record failed its check (the detail says which; nothing of it is served), or internal: a fault, whose detail says nothing more',
        ),
        TooManyRequests: problemResponse(
          'too_many_requests: wrong secrets for one token from one client address past the budget, or too many token verifications in progress (Retry-After says when to try again)',
          { 'Retry-After': ref('Retry-After') },
        ),
        Unavailable: problemResponse(
          'audit_unavailable or storage_unavailable: the request could not be recorded in the audit log, or the storage cannot be reached (Retry-After says when to try again)',
          { 'Retry-After': ref('Retry-After') },
        ),
      },
      schemas: Object.fromEntries(
        Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [name, referenced(schema)]),
      ),
    },
    security: [{ bearer: [] }],
    // Coffer's own API: what /vault/v1 serves is Vault's (docs/vault-compatibility.md), not described here.
    paths: referenced(paths(operations.filter((op) => op.dialect === undefined))),
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
        responses: {
          200: ok('This OpenAPI 3.1 document', {
            type: 'object',
            required: ['openapi', 'info', 'paths', 'components'],
            properties: {
              openapi: { const: '3.1.0' },
              info: { type: 'object' },
              paths: { type: 'object' },
              components: { type: 'object' },
            },
            additionalProperties: true,
          }),
        },
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
