/**
 * JSON schemas of request bodies. The server validates against these (api/validate.ts) and the
 * OpenAPI document (api/openapi.ts) publishes the very same objects.
 */

import { type Static, Type } from '@sinclair/typebox';
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

/** A key's own metadata: free string fields, bounded as a token's are (model/tokens.ts). */
export const keyMetadataSchema = Type.Unsafe<Record<string, string>>(
  Type.Object(
    {},
    {
      maxProperties: METADATA_LIMITS.fields,
      patternProperties: {
        [METADATA_LIMITS.field.source]: Type.String({ maxLength: METADATA_LIMITS.value }),
      },
      additionalProperties: false,
      description: `Free string fields (at most ${METADATA_LIMITS.fields}, names of letters, digits, _ . -, values up to ${METADATA_LIMITS.value} characters, ${METADATA_LIMITS.bytes / 1024} KiB in all); not secret: shown to whoever may list the key`,
    },
  ),
);

/** The most versions a key may be set to keep (max_versions). */
export const MAX_KEPT_VERSIONS = 100_000;

/** The longest delete_version_after a key may be set to: ten years, in seconds. */
export const MAX_DELETE_AFTER_SECONDS = 10 * 365 * 86_400;

/** What PATCH /v1/kv/{namespace}/{key} takes: the key's metadata, not its value. */
export const kvMetadataSchema = Type.Object(
  {
    custom_metadata: Type.Optional(keyMetadataSchema),
    max_versions: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_KEPT_VERSIONS,
        description:
          'versions kept at the most (0: no limit); each write beyond it destroys the oldest, audited in its entry (pruned)',
      }),
    ),
    cas_required: Type.Optional(
      Type.Boolean({
        description:
          'true: every write must name the version it replaces (If-Match or cas; 0 for a new key), else 428',
      }),
    ),
    delete_version_after: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_DELETE_AFTER_SECONDS,
        description:
          'seconds after which each new version is deleted (kept, read again once undeleted); 0: never. Versions written before keep their own time. While set, the key keeps at most 1,000 versions',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export type KvMetadataRequest = Static<typeof kvMetadataSchema>;

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

/** POST /v1/auth/login/jwt: the JWT's size is checked by the login (a 401), not here. */
const tokenRoleField = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: 64,
    description:
      "With a login role's group_roles: which of the roles the caller's groups name the token gets (needed when they name several).",
  }),
);

export const loginJwtSchema = Type.Object(
  {
    role: Type.String({ minLength: 1, maxLength: 64, description: 'The login role.' }),
    jwt: Type.String({
      minLength: 1,
      description: 'The JWT (compact form); refused above COFFER_LOGIN_MAX_JWT_BYTES.',
    }),
    token_role: tokenRoleField,
  },
  { additionalProperties: false },
);

export type LoginJwtRequest = Static<typeof loginJwtSchema>;

/** POST /v1/console/session: the token a person signs in to the web console with. */
export const consoleSignInSchema = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'A Coffer token (the root token, or one made for the person).',
    }),
  },
  { additionalProperties: false },
);

export type ConsoleSignInRequest = Static<typeof consoleSignInSchema>;

const loopbackNote =
  'http://127.0.0.1:PORT/…, http://localhost:PORT/… or http://[::1]:PORT/… (any port), or one of the login role’s oidc.redirect_uris';

/** POST /v1/auth/login/oidc/start: the CLI (or the console) keeps the PKCE verifier, state and nonce. */
export const loginOidcStartSchema = Type.Object(
  {
    role: Type.String({ minLength: 1, maxLength: 64, description: 'The login role.' }),
    redirect_uri: Type.String({ minLength: 1, maxLength: 2048, description: loopbackNote }),
    code_challenge: Type.String({
      pattern: '^[A-Za-z0-9_-]{43}$',
      description: 'BASE64URL(SHA-256(code_verifier)), RFC 7636 S256.',
    }),
    state: Type.String({ pattern: '^[A-Za-z0-9_-]{22,128}$' }),
    nonce: Type.String({ pattern: '^[A-Za-z0-9_-]{22,128}$' }),
  },
  { additionalProperties: false },
);

export type LoginOidcStartRequest = Static<typeof loginOidcStartSchema>;

/** POST /v1/auth/login/oidc/callback: what the provider sent to the redirect address, and the PKCE verifier. */
export const loginOidcCallbackSchema = Type.Object(
  {
    role: Type.String({ minLength: 1, maxLength: 64, description: 'The login role.' }),
    redirect_uri: Type.String({ minLength: 1, maxLength: 2048, description: loopbackNote }),
    code: Type.String({ minLength: 1, maxLength: 4096 }),
    state: Type.String({ pattern: '^[A-Za-z0-9_-]{22,128}$' }),
    iss: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'as the provider sent it' }),
    ),
    code_verifier: Type.String({ pattern: '^[A-Za-z0-9._~-]{43,128}$' }),
    nonce: Type.String({ pattern: '^[A-Za-z0-9_-]{22,128}$' }),
    token_role: tokenRoleField,
  },
  { additionalProperties: false },
);

export type LoginOidcCallbackRequest = Static<typeof loginOidcCallbackSchema>;

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
      groups_claim: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 256,
          description: "The claim holding the caller's groups; default groups.",
        }),
      ),
      group_roles: Type.Optional(
        Type.Record(
          Type.String({ minLength: 1, maxLength: 256 }),
          Type.String({ minLength: 1, maxLength: 64 }),
          {
            minProperties: 1,
            maxProperties: 128,
            description:
              'Group → role. With it, role or scopes (at most one) is what a login whose groups name none gets; without either, such a login is refused.',
          },
        ),
      ),
      oidc: Type.Optional(
        Type.Object(
          {
            client_id: Type.String({ minLength: 1, maxLength: 256 }),
            client_secret: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 1024,
                description:
                  'Kept sealed, never shown. Left out when the login role is replaced with the same client_id: the stored one is kept.',
              }),
            ),
            scopes: Type.Optional(
              Type.Array(Type.String({ pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]{1,128}$' }), {
                minItems: 1,
                maxItems: 32,
                description: 'Default openid, profile, email; openid is always asked for.',
              }),
            ),
            redirect_uris: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
                minItems: 1,
                maxItems: 16,
                description:
                  'Redirect addresses allowed besides the loopback ones (any port), exactly as given.',
              }),
            ),
          },
          {
            additionalProperties: false,
            description:
              'People sign in through the issuer (authorization code with PKCE); needs discovery: true, and client_id among bound_audiences.',
          },
        ),
      ),
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
        'Exactly one of jwks_url, discovery and public_keys; exactly one of role and scopes, or group_roles with at most one of them.',
    },
  );
}

export type LoginRolePutRequest = Static<ReturnType<typeof loginRolePutSchema>>;
