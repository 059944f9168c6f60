/**
 * JSON schemas of request bodies. The server validates against these (http/validate.ts) and the
 * OpenAPI document (http/openapi.ts) publishes the very same objects.
 */
import { PROVIDER_NAMES, providerRequestProperties } from '../keys/registry.js';
import { VALUE_TYPES } from '../model/value-types.js';

export const kvPutSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['value', 'type'],
  properties: {
    value: {
      type: 'string',
      description: 'The value; at most COFFER_MAX_VALUE_BYTES bytes of UTF-8.',
    },
    type: {
      enum: [...VALUE_TYPES],
      description:
        'secret values are sealed at rest; config values are stored readable but authenticated.',
    },
  },
} as const;

export function tokenCreateSchema(maxTtl: number) {
  return {
    type: 'object',
    additionalProperties: false,
    description: 'Exactly one of role and scopes.',
    properties: {
      role: { type: 'string', minLength: 1, maxLength: 64 },
      scopes: {
        type: 'array',
        minItems: 1,
        maxItems: 256,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['namespace'],
          properties: {
            namespace: {
              type: 'string',
              minLength: 1,
              maxLength: 2200,
              description: '*, a namespace, or a namespace followed by /*',
            },
            read: { type: 'boolean', default: false },
            write: { type: 'boolean', default: false },
          },
        },
      },
      expires_in: {
        type: 'integer',
        minimum: 1,
        maximum: maxTtl,
        description: 'Lifetime in seconds; default COFFER_DEFAULT_TTL.',
      },
      metadata: {
        type: 'object',
        additionalProperties: false,
        properties: {
          name: { type: 'string', maxLength: 128 },
          description: { type: 'string', maxLength: 1024 },
        },
      },
    },
  } as const;
}

export const rewrapSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    batch_size: {
      type: 'integer',
      minimum: 1,
      maximum: 10000,
      default: 500,
      description: 'Records per transaction.',
    },
  },
} as const;

/** The body of POST /v1/sys/keyring/migrate: the new provider's settings, as in the configuration file. */
export const migrateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key_provider'],
  properties: { key_provider: { enum: PROVIDER_NAMES }, ...providerRequestProperties() },
} as const;
