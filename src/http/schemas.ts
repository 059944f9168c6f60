/**
 * JSON schemas of request bodies. The server validates against these (http/validate.ts) and the
 * OpenAPI document (http/openapi.ts) publishes the very same objects.
 */

import { type Static, Type } from '@sinclair/typebox';
import { PROVIDER_NAMES, providerRequestProperties } from '../keys/registry.js';
import { ACTIONS, GRANTABLE_PRIVILEGES, type Privilege } from '../model/policies.js';
import { METADATA_LIMITS } from '../model/tokens.js';
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
          {},
          {
            maxProperties: 32,
            patternProperties: {
              [METADATA_LIMITS.field.source]: Type.String({ maxLength: METADATA_LIMITS.value }),
            },
            additionalProperties: false,
            description:
              'Free string fields (at most 32, names of letters, digits, _ . -, values up to 1024 characters, 4 KiB in all), shown in listings; `name` (up to 128) also in each audit entry of its requests.',
          },
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

/** POST /v1/auth/login/jwt: the JWT's size is checked by the login (a 401), not here. */
export const loginJwtSchema = Type.Object(
  {
    role: Type.String({ minLength: 1, maxLength: 64, description: 'The login role.' }),
    jwt: Type.String({
      minLength: 1,
      description: 'The JWT (compact form); refused above COFFER_LOGIN_MAX_JWT_BYTES.',
    }),
  },
  { additionalProperties: false },
);

export type LoginJwtRequest = Static<typeof loginJwtSchema>;

const roleRuleSchema = Type.Object(
  {
    namespaces: Type.Array(Type.String({ minLength: 1, maxLength: 2200 }), {
      minItems: 1,
      maxItems: 256,
      description: '*, namespaces, or namespaces followed by /*',
    }),
    actions: Type.Array(Type.Unsafe<(typeof ACTIONS)[number]>({ enum: [...ACTIONS] }), {
      minItems: 1,
      uniqueItems: true,
    }),
    types: Type.Array(Type.Unsafe<ValueType>({ enum: [...VALUE_TYPES] }), {
      minItems: 1,
      uniqueItems: true,
    }),
  },
  { additionalProperties: false },
);

/** PUT /v1/sys/roles/{name}: a custom role's rules, as in the configuration file's `roles`. */
export const rolePutSchema = Type.Object(
  {
    rules: Type.Array(roleRuleSchema, { minItems: 1, maxItems: 256 }),
    privileges: Type.Optional(
      Type.Array(Type.Unsafe<Privilege>({ enum: [...GRANTABLE_PRIVILEGES] }), {
        uniqueItems: true,
        description:
          'System privileges beyond the rules: create_tokens, list_tokens, read_keyring, read_audit.',
      }),
    ),
  },
  { additionalProperties: false },
);

export type RolePutRequest = Static<typeof rolePutSchema>;

const claimValues = Type.Union([
  Type.String({ minLength: 1, maxLength: 1024 }),
  Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 64 }),
]);

/** PUT /v1/sys/login-roles/{name} (docs/identity.md). */
export function loginRolePutSchema(maxTtl: number) {
  return Type.Object(
    {
      issuer: Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'The `iss` to expect, exactly.',
      }),
      jwks_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
      discovery: Type.Optional(
        Type.Boolean({
          description: "Keys from {issuer}/.well-known/openid-configuration's jwks_uri.",
        }),
      ),
      public_keys: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 16384 }), {
          minItems: 1,
          maxItems: 16,
          description: 'PEM public keys or certificates, or public JWKs as JSON text.',
        }),
      ),
      ca_pem: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })),
      bound_audiences: Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), {
        minItems: 1,
        maxItems: 32,
      }),
      bound_subject: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
      bound_claims: Type.Optional(
        Type.Record(Type.String({ minLength: 1, maxLength: 256 }), claimValues, {
          maxProperties: 32,
        }),
      ),
      role: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      scopes: Type.Optional(Type.Array(scopeRequest, { minItems: 1, maxItems: 256 })),
      ttl: Type.Optional(Type.Integer({ minimum: 1, maximum: maxTtl, description: 'seconds' })),
      max_ttl: Type.Optional(Type.Integer({ minimum: 1, maximum: maxTtl, description: 'seconds' })),
      claims_to_metadata: Type.Optional(
        Type.Record(
          Type.String({ minLength: 1, maxLength: 256 }),
          Type.String({ minLength: 1, maxLength: 64 }),
          {
            maxProperties: 16,
          },
        ),
      ),
    },
    {
      additionalProperties: false,
      description:
        'Exactly one of jwks_url, discovery and public_keys; exactly one of role and scopes.',
    },
  );
}

export type LoginRolePutRequest = Static<ReturnType<typeof loginRolePutSchema>>;
