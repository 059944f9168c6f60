/**
 * The OpenAPI 3.1 document served at GET /v1/openapi.json. Request schemas are the objects the server
 * validates with (http/schemas.ts); test/http/openapi.test.ts checks every documented operation against
 * the running server.
 */
import { ERROR_CODES } from '../errors.js';
import { kvPutSchema, migrateSchema, rewrapSchema, tokenCreateSchema } from './schemas.js';

const problem = { $ref: '#/components/responses/Problem' };
const tooMany = {
  ...problem,
  description:
    'too_many_requests: wrong secrets for one token from one client address past the budget (Retry-After says when to try again)',
};
const json = (schema: object) => ({ content: { 'application/json': { schema } } });
const ok = (description: string, schema: object) => ({ description, ...json(schema) });
/**
 * The problems an operation answers. Every operation that takes a token may also answer 429 (the budget of
 * wrong secrets), and every operation 503 audit_unavailable (its audit entry could not be written).
 */
const errors = (...statuses: number[]) =>
  Object.fromEntries([
    ...statuses.map((s) => [String(s), problem]),
    ...(statuses.includes(401) ? [['429', tooMany]] : []),
    ['503', problem],
  ]);

const nsParam = {
  name: 'namespace',
  in: 'path',
  required: true,
  // Generated clients percent-encode path parameters; a '/' sent as %2F is refused (400), so say so.
  description:
    "1 to 16 segments separated by /, sent as literal '/' characters in the path (payments/prod, not payments%2Fprod, which is refused with 400): a generated client must not encode the slashes, or must build this path itself",
  schema: { type: 'string' },
};
const keyParam = {
  name: 'key',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' },
};
const timestamp = { type: 'string', format: 'date-time' };
const types = { enum: ['config', 'secret'] };
const scope = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    read: { type: 'boolean' },
    write: { type: 'boolean' },
  },
};
const token = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    role: { type: ['string', 'null'] },
    scopes: { type: ['array', 'null'], items: scope },
    metadata: { type: 'object' },
    created_at: timestamp,
    expires_at: timestamp,
    status: { enum: ['active', 'revoked', 'expired'] },
  },
};
const entryInfo = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    key: { type: 'string' },
    version: { type: 'integer' },
    type: types,
    created_at: timestamp,
  },
};
const listing = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    keys: { type: 'array', items: { type: 'string' } },
    namespaces: { type: 'array', items: { type: 'string' } },
    next_cursor: { type: ['string', 'null'] },
  },
};
const rewrapView = {
  type: 'object',
  properties: {
    running: { type: 'boolean' },
    target_version: { type: ['integer', 'null'] },
    total: { type: 'integer' },
    examined: { type: 'integer' },
    rewrapped: { type: 'integer' },
    failed: { type: 'integer' },
    started_at: { type: ['string', 'null'] },
    updated_at: { type: ['string', 'null'] },
    finished_at: { type: ['string', 'null'] },
  },
};
const listQuery = [
  {
    name: 'limit',
    in: 'query',
    schema: { type: 'integer', minimum: 1, maximum: 10000, default: 1000 },
  },
  {
    name: 'cursor',
    in: 'query',
    schema: { type: 'string' },
    description: 'next_cursor from the previous page',
  },
  {
    name: 'list',
    in: 'query',
    schema: { type: 'boolean' },
    description: 'list the path as a namespace',
  },
];

export function openApiDocument(maxTtl: number): object {
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
    paths: {
      '/v1/openapi.json': {
        get: {
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          security: [],
          responses: {
            200: { description: 'OpenAPI 3.1 document' },
            400: { ...problem, description: 'a query parameter was given (it takes none)' },
          },
        },
      },
      '/v1/auth/me': {
        get: {
          operationId: 'getSelf',
          summary: 'Identity, role and capabilities of the calling token',
          responses: {
            200: ok('The caller', {
              type: 'object',
              properties: {
                id: { type: 'string' },
                is_root: { type: 'boolean' },
                role: { type: ['string', 'null'] },
                scopes: { type: ['array', 'null'] },
                metadata: { type: 'object' },
                expires_at: { type: ['string', 'null'] },
                capabilities: { type: 'array' },
                privileges: {
                  type: 'array',
                  items: {
                    enum: [
                      'manage_tokens',
                      'list_tokens',
                      'manage_keyring',
                      'read_keyring',
                      'read_audit',
                    ],
                  },
                },
              },
            }),
            ...errors(400, 401),
          },
        },
      },
      '/v1/auth/token': {
        post: {
          operationId: 'createToken',
          summary: 'Create a token (root only)',
          requestBody: { required: true, ...json(tokenCreateSchema(maxTtl)) },
          responses: {
            201: ok('The new token; its value is shown only here', {
              ...token,
              properties: {
                ...token.properties,
                token: { type: 'string' },
                expires_in: { type: 'integer' },
              },
            }),
            ...errors(400, 401, 403, 413, 415),
          },
        },
      },
      '/v1/auth/tokens': {
        get: {
          operationId: 'listTokens',
          summary: 'List tokens (root and auditor); active ones unless all=true',
          parameters: [{ name: 'all', in: 'query', schema: { type: 'boolean' } }],
          responses: {
            200: ok('Tokens, without values or hashes', {
              type: 'object',
              properties: { tokens: { type: 'array', items: token } },
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/auth/token/{token}': {
        delete: {
          operationId: 'revokeToken',
          summary: 'Revoke a token by value or id (root only)',
          parameters: [{ name: 'token', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            204: { description: 'Revoked (also when it already was)' },
            ...errors(400, 401, 403, 404),
          },
        },
      },
      '/v1/sys/keyring': {
        get: {
          operationId: 'getKeyringStatus',
          summary:
            'Keyring status (root and auditor): provider, versions, the active one, and how many records each wraps',
          responses: {
            200: ok('Status', {
              type: 'object',
              properties: {
                provider: { type: 'string' },
                wrapped_by: { type: 'string' },
                migrations: { type: 'integer' },
                migrated_at: { type: ['string', 'null'] },
                active_version: { type: 'integer' },
                generation: { type: 'integer' },
                versions: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      version: { type: 'integer' },
                      created_at: timestamp,
                      active: { type: 'boolean' },
                      secrets: { type: 'integer' },
                      configs: { type: 'integer' },
                    },
                  },
                },
                unreadable: { type: 'integer' },
              },
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/sys/keyring/rotate': {
        post: {
          operationId: 'rotateKeyring',
          summary: 'Add a keyring version and make it active for every process (root only)',
          responses: {
            200: ok('Rotated', {
              type: 'object',
              properties: {
                previous_version: { type: 'integer' },
                active_version: { type: 'integer' },
              },
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/sys/keyring/rewrap': {
        post: {
          operationId: 'startRewrap',
          summary:
            'Start (or continue) rewrapping every record onto the active version, in the background (root only)',
          requestBody: { required: false, ...json(rewrapSchema) },
          responses: {
            202: ok('Started, or already running', rewrapView),
            ...errors(400, 401, 403, 415),
          },
        },
        get: {
          operationId: 'getRewrapStatus',
          summary: 'Progress of the current or last rewrap (root and auditor)',
          responses: { 200: ok('Progress', rewrapView), ...errors(400, 401, 403) },
        },
      },
      '/v1/sys/keyring/retire': {
        post: {
          operationId: 'retireKeyringVersions',
          summary: 'Remove keyring versions that no record uses any more (root only)',
          responses: {
            200: ok('Retired', {
              type: 'object',
              properties: {
                retired: { type: 'array', items: { type: 'integer' } },
                versions: { type: 'array', items: { type: 'integer' } },
              },
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/sys/keyring/migrate': {
        post: {
          operationId: 'migrateKeyring',
          summary:
            'Rewrap the keyring under another master key or provider, in one atomic write (root only); restart with the new key configured',
          requestBody: { required: true, ...json(migrateSchema) },
          responses: {
            200: ok('Migrated', {
              type: 'object',
              properties: {
                from: { type: 'string' },
                to: { type: 'string' },
                provider: { type: 'string' },
                migrated_at: timestamp,
              },
            }),
            ...errors(400, 401, 403, 415),
          },
        },
      },
      '/v1/sys/audit': {
        get: {
          operationId: 'searchAuditLog',
          summary:
            'Search the audit log (root and auditor), oldest first; entries never hold a value or a token',
          parameters: [
            { name: 'from', in: 'query', schema: timestamp, description: 'inclusive' },
            { name: 'to', in: 'query', schema: timestamp, description: 'exclusive' },
            {
              name: 'token_id',
              in: 'query',
              schema: { type: 'string' },
              description: 'the caller, the token acted on, or who ran an operator event',
            },
            {
              name: 'prefix',
              in: 'query',
              schema: { type: 'string' },
              description: 'prefix of namespace/key',
            },
            {
              name: 'key',
              in: 'query',
              schema: { type: 'string' },
              description: 'exactly this namespace/key',
            },
            {
              name: 'action',
              in: 'query',
              schema: { type: 'string' },
              description: 'an action or event name; a trailing * matches a prefix',
            },
            {
              name: 'outcome',
              in: 'query',
              schema: { type: 'string' },
              description: 'success, failure, a status (403) or an error code (forbidden)',
            },
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
            },
            {
              name: 'cursor',
              in: 'query',
              schema: { type: 'string' },
              description: 'next_cursor from the previous page',
            },
          ],
          responses: {
            200: ok('One page of entries', {
              type: 'object',
              properties: {
                entries: { type: 'array', items: { type: 'object' } },
                next_cursor: { type: ['string', 'null'] },
              },
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/sys/audit/verify': {
        get: {
          operationId: 'verifyAuditLog',
          summary:
            'Check every audit chain and checkpoint, and which stored versions the log names (root and auditor)',
          responses: {
            200: ok(
              'intact: entries, chains, files, first and last time, coverage; or broken: the first broken entry (file, line, seq) and why',
              {
                type: 'object',
                properties: {
                  intact: { type: 'boolean' },
                  entries: { type: 'integer' },
                  chains: { type: 'integer' },
                  files: { type: 'integer' },
                  first: { type: ['string', 'null'] },
                  last: { type: ['string', 'null'] },
                  uncheckpointed: { type: 'integer' },
                  coverage: { type: 'object' },
                  file: { type: 'string' },
                  line: { type: 'integer' },
                  seq: { type: ['integer', 'null'] },
                  reason: { type: 'string' },
                },
              },
            ),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/sys/seal-report': {
        get: {
          operationId: 'getSealReport',
          summary:
            'Whether every stored version is sealed, read from its structure without decrypting (root and auditor)',
          parameters: [
            {
              name: 'verify',
              in: 'query',
              schema: { type: 'boolean' },
              description: 'also open every record in memory; no value is returned',
            },
          ],
          responses: {
            200: ok('The report', {
              type: 'object',
              properties: {
                generated_at: timestamp,
                verified: { type: 'boolean' },
                totals: { type: 'object' },
                keyring: { type: 'object' },
                namespaces: { type: 'array' },
                anomalies: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      namespace: { type: 'string' },
                      key: { type: 'string' },
                      version: { type: 'integer' },
                      problem: { type: 'string' },
                    },
                  },
                },
                records: {
                  type: 'array',
                  description:
                    "The store's own records by kind (root-token, token, audit-chain, intent-copy) and how many failed their check",
                  items: {
                    type: 'object',
                    properties: {
                      kind: { type: 'string' },
                      records: { type: 'integer' },
                      failed: { type: 'integer' },
                    },
                  },
                },
              },
            }),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/kv/{namespace}': {
        get: {
          operationId: 'listNamespace',
          summary: 'List a namespace (a one-segment path, a trailing slash, or list=true)',
          parameters: [nsParam, ...listQuery],
          responses: {
            200: ok('Keys and child namespaces the caller may see', listing),
            ...errors(400, 401, 403),
          },
        },
      },
      '/v1/kv/{namespace}/{key}': {
        get: {
          operationId: 'readKey',
          summary:
            'Read a key (latest or ?version=n); a path naming no key but a namespace lists it',
          parameters: [
            nsParam,
            keyParam,
            { name: 'version', in: 'query', schema: { type: 'integer', minimum: 1 } },
            ...listQuery,
          ],
          responses: {
            200: {
              description: 'The entry (with ETag: "<version>"), or a listing',
              ...json({
                // Told apart by their required fields: an entry has a key and a value, a listing keys.
                oneOf: [
                  {
                    ...entryInfo,
                    properties: { ...entryInfo.properties, value: { type: 'string' } },
                    required: ['namespace', 'key', 'version', 'type', 'created_at', 'value'],
                    additionalProperties: false,
                  },
                  {
                    ...listing,
                    required: ['namespace', 'keys', 'namespaces', 'next_cursor'],
                    additionalProperties: false,
                  },
                ],
              }),
            },
            ...errors(400, 401, 403, 404, 500),
          },
        },
        put: {
          operationId: 'writeKey',
          summary: 'Store a new version; 201 when the key is created, 200 when a version is added',
          parameters: [nsParam, keyParam],
          requestBody: { required: true, ...json(kvPutSchema) },
          responses: {
            200: ok('Version added', entryInfo),
            201: ok('Key created', entryInfo),
            ...errors(400, 401, 403, 413, 415),
          },
        },
        delete: {
          operationId: 'deleteKey',
          summary: 'Delete the key and all its versions (numbers are never reused)',
          parameters: [nsParam, keyParam],
          responses: { 204: { description: 'Deleted' }, ...errors(400, 401, 403, 404) },
        },
      },
      '/v1/kv/{namespace}/{key}/versions': {
        get: {
          operationId: 'listKeyVersions',
          summary: 'List the versions of a key, oldest first',
          parameters: [nsParam, keyParam],
          responses: {
            200: ok('Versions', {
              type: 'object',
              properties: {
                namespace: { type: 'string' },
                key: { type: 'string' },
                current_version: { type: 'integer' },
                versions: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      version: { type: 'integer' },
                      type: types,
                      created_at: timestamp,
                    },
                  },
                },
              },
            }),
            ...errors(400, 401, 403, 404, 500),
          },
        },
      },
    },
  };
}
