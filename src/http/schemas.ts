/**
 * JSON schemas of request bodies. The server validates against these (http/validate.ts) and the
 * OpenAPI document (http/openapi.ts) publishes the very same objects.
 */

import { type Static, Type } from '@sinclair/typebox';
import { PROVIDER_NAMES, providerRequestProperties } from '../keys/registry.js';
import { VALUE_TYPES, type ValueType } from '../model/value-types.js';

export const kvPutSchema = Type.Object(
  {
    value: Type.String({
      description: 'The value; at most COFFER_MAX_VALUE_BYTES bytes of UTF-8.',
    }),
    type: Type.Unsafe<ValueType>({
      enum: [...VALUE_TYPES],
      description:
        'secret values are sealed at rest; config values are stored readable but authenticated.',
    }),
  },
  { additionalProperties: false },
);

/** What PUT /v1/kv/{namespace}/{key} takes. */
export type KvPutRequest = Static<typeof kvPutSchema>;

const scopeRequest = Type.Object(
  {
    namespace: Type.String({
      minLength: 1,
      maxLength: 2200,
      description: '*, a namespace, or a namespace followed by /*',
    }),
    read: Type.Optional(Type.Boolean({ default: false })),
    write: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);

export function tokenCreateSchema(maxTtl: number) {
  return Type.Object(
    {
      role: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      scopes: Type.Optional(Type.Array(scopeRequest, { minItems: 1, maxItems: 256 })),
      expires_in: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: maxTtl,
          description: 'Lifetime in seconds; default COFFER_DEFAULT_TTL.',
        }),
      ),
      metadata: Type.Optional(
        Type.Object(
          {
            name: Type.Optional(Type.String({ maxLength: 128 })),
            description: Type.Optional(Type.String({ maxLength: 1024 })),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false, description: 'Exactly one of role and scopes.' },
  );
}

/** What POST /v1/auth/token takes. */
export type TokenCreateRequest = Static<ReturnType<typeof tokenCreateSchema>>;

export const rewrapSchema = Type.Object(
  {
    batch_size: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10000,
        default: 500,
        description: 'Records per transaction.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** What POST /v1/sys/keyring/rewrap takes. */
export type RewrapRequest = Static<typeof rewrapSchema>;

/** The body of POST /v1/sys/keyring/migrate: the new provider's settings, as in the configuration file. */
export const migrateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['key_provider'],
  properties: { key_provider: { enum: PROVIDER_NAMES }, ...providerRequestProperties() },
} as const;
