/**
 * JSON Schemas of what the API answers, for the OpenAPI document (the routes declare which they give). The
 * schemas of what it accepts are in schemas.ts, where the server validates with them.
 */

export const json = (schema: object) => ({ content: { 'application/json': { schema } } });
export const ok = (description: string, schema: object) => ({ description, ...json(schema) });

export const timestamp = { type: 'string', format: 'date-time' };
export const valueTypes = { enum: ['config', 'secret'] };

const scope = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    read: { type: 'boolean' },
    write: { type: 'boolean' },
  },
};

export const token = {
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

export const entryInfo = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    key: { type: 'string' },
    version: { type: 'integer' },
    type: valueTypes,
    created_at: timestamp,
  },
};

export const listing = {
  type: 'object',
  properties: {
    namespace: { type: 'string' },
    keys: { type: 'array', items: { type: 'string' } },
    namespaces: { type: 'array', items: { type: 'string' } },
    next_cursor: { type: ['string', 'null'] },
  },
};

export const rewrapView = {
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
