/**
 * Checking a login role before it is stored (PUT /v1/sys/login-roles/{name}): what its JSON schema
 * (api/schemas.ts) cannot say. Exactly one key source; key addresses HTTPS (plain HTTP on loopback only);
 * public keys that are public keys (PEM or JWK, RSA, EC or Ed25519 — never a private key or a shared
 * secret); exactly one of role and scopes, the role existing and not root, each scope a valid pattern once
 * its placeholders are filled; TTLs within the server's; claim paths and metadata names well formed.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { type FieldIssue, invalid } from '../errors.js';
import type { LoginRole, OidcClientSettings } from '../model/policies.js';
import { METADATA_LIMITS } from '../model/tokens.js';
import { hasStrayBraces, sampleOf } from './claims.js';
import { isKeyAddress } from './issuer-http.js';
import { parsePattern } from './patterns.js';
import { ROOT_ROLE } from './roles.js';

/** A login role as PUT sends it: the stored form without its id and time, its defaults not yet filled. */
export type LoginRoleInput = Omit<
  LoginRole,
  'id' | 'updated_at' | 'ttl' | 'max_ttl' | 'scopes' | 'oidc'
> & {
  readonly ttl?: number;
  readonly max_ttl?: number;
  readonly scopes?: readonly { namespace: string; read?: boolean; write?: boolean }[];
  readonly oidc?: Omit<OidcClientSettings, 'scopes'> & { readonly scopes?: readonly string[] };
};

/** What an OIDC sign-in asks for when the login role does not say. */
export const DEFAULT_OIDC_SCOPES = ['openid', 'profile', 'email'] as const;

/** A login role as GET shows it: the client secret never leaves the server. */
export type LoginRoleView = Omit<LoginRole, 'oidc'> & {
  readonly oidc?: Omit<OidcClientSettings, 'client_secret'> & {
    readonly client_secret_set: boolean;
  };
};

export function loginRoleView(role: LoginRole): LoginRoleView {
  const { oidc, ...rest } = role;
  if (!oidc) return rest;
  const { client_secret, ...shown } = oidc;
  return { ...rest, oidc: { ...shown, client_secret_set: client_secret !== undefined } };
}

/** Whether `url` is an address an OIDC provider may send a person back to, as a login role lists them. */
function isRedirectAddress(url: string): boolean {
  return isKeyAddress(url) && new URL(url).hash === '';
}

const CLAIM_PATH = /^[A-Za-z0-9_:$@-]+(\.[A-Za-z0-9_:$@-]+)*$/;

/** A public key from a login role's `public_keys`: a PEM public key or certificate, or a public JWK. */
export function publicKeyOf(text: string): KeyObject | undefined {
  try {
    const trimmed = text.trim();
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as Record<string, unknown>;
      if (!['RSA', 'EC', 'OKP'].includes(jwk.kty as string) || 'd' in jwk) return undefined;
      return createPublicKey({ key: jwk as never, format: 'jwk' });
    }
    // A private key's PEM would give its public half: refused, so no private key is ever stored.
    if (/PRIVATE KEY/.test(trimmed)) return undefined;
    const key = createPublicKey(trimmed);
    return key.type === 'public' &&
      ['rsa', 'rsa-pss', 'ec', 'ed25519'].includes(key.asymmetricKeyType!)
      ? key
      : undefined;
  } catch {
    return undefined;
  }
}

export function checkLoginRole(
  input: LoginRoleInput,
  server: {
    readonly hasRole: (name: string) => boolean;
    readonly defaultTtl: number;
    readonly maxTtl: number;
    readonly now: () => number;
  },
): Omit<LoginRole, 'id'> {
  const issues: FieldIssue[] = [];
  const issue = (field: string, message: string): void => {
    issues.push({ field, in: 'body', message });
  };
  const sources = [
    input.jwks_url !== undefined,
    input.discovery === true,
    input.public_keys !== undefined,
  ].filter(Boolean).length;
  if (sources !== 1) issue('', 'give exactly one of jwks_url, discovery: true and public_keys');
  if (input.jwks_url !== undefined && !isKeyAddress(input.jwks_url))
    issue('/jwks_url', 'must be an https:// address (http:// only to localhost)');
  if (input.discovery === true && !isKeyAddress(input.issuer))
    issue('/issuer', 'with discovery, must be an https:// address (http:// only to localhost)');
  input.public_keys?.forEach((text, i) => {
    if (!publicKeyOf(text))
      issue(
        `/public_keys/${i}`,
        'must be a PEM public key or certificate, or a public JWK (RSA, EC or OKP), never a private key',
      );
  });
  if (input.ca_pem !== undefined && !/-----BEGIN CERTIFICATE-----/.test(input.ca_pem))
    issue('/ca_pem', 'must hold PEM certificates');
  if (input.group_roles === undefined) {
    if ((input.role === undefined) === (input.scopes === undefined))
      issue('', 'give exactly one of role and scopes (or group_roles)');
  } else if (input.role !== undefined && input.scopes !== undefined)
    issue('', 'give at most one of role and scopes beside group_roles');
  const givable = (name: string) => name !== ROOT_ROLE && server.hasRole(name);
  if (input.role !== undefined && !givable(input.role))
    issue('/role', 'must name a role that can be given to a token');
  for (const [group, name] of Object.entries(input.group_roles ?? {}))
    if (!givable(name))
      issue(`/group_roles/${group}`, 'must name a role that can be given to a token');
  if (input.groups_claim !== undefined && !CLAIM_PATH.test(input.groups_claim))
    issue('/groups_claim', 'must be a dotted claim path');
  if (input.oidc !== undefined) {
    if (input.discovery !== true)
      issue('/oidc', "needs discovery: true (the provider's endpoints come from it)");
    if (!input.bound_audiences.includes(input.oidc.client_id))
      issue('/bound_audiences', 'must hold oidc.client_id (the audience of its ID tokens)');
    input.oidc.redirect_uris?.forEach((uri, i) => {
      if (!isRedirectAddress(uri))
        issue(
          `/oidc/redirect_uris/${i}`,
          'must be an https:// address (http:// only to localhost), without a fragment',
        );
    });
  }
  input.scopes?.forEach((scope, i) => {
    if (hasStrayBraces(scope.namespace) || !parsePattern(sampleOf(scope.namespace)))
      issue(
        `/scopes/${i}/namespace`,
        'must be *, a namespace, or a namespace followed by /*, with {claims.NAME} standing for whole segments',
      );
    if (!scope.read && !scope.write) issue(`/scopes/${i}`, 'must grant read, write or both');
  });
  const ttl = input.ttl ?? server.defaultTtl;
  const maxTtl = input.max_ttl ?? server.maxTtl;
  if (ttl > server.maxTtl) issue('/ttl', `must be at most the server's max TTL, ${server.maxTtl}`);
  if (maxTtl > server.maxTtl)
    issue('/max_ttl', `must be at most the server's max TTL, ${server.maxTtl}`);
  if (ttl > maxTtl) issue('/ttl', 'must be at most max_ttl');
  for (const path of Object.keys(input.bound_claims ?? {}))
    if (!CLAIM_PATH.test(path)) issue(`/bound_claims/${path}`, 'must be a dotted claim path');
  for (const [path, field] of Object.entries(input.claims_to_metadata ?? {})) {
    if (!CLAIM_PATH.test(path)) issue(`/claims_to_metadata/${path}`, 'must be a dotted claim path');
    if (!METADATA_LIMITS.field.test(field))
      issue(
        `/claims_to_metadata/${path}`,
        `must name a metadata field matching ${METADATA_LIMITS.field.source}`,
      );
  }
  if (issues.length > 0) throw invalid('invalid login role', issues);
  return {
    issuer: input.issuer,
    ...(input.jwks_url === undefined ? {} : { jwks_url: input.jwks_url }),
    ...(input.discovery === true ? { discovery: true } : {}),
    ...(input.public_keys === undefined ? {} : { public_keys: input.public_keys }),
    ...(input.ca_pem === undefined ? {} : { ca_pem: input.ca_pem }),
    bound_audiences: input.bound_audiences,
    ...(input.bound_subject === undefined ? {} : { bound_subject: input.bound_subject }),
    ...(input.bound_claims === undefined ? {} : { bound_claims: input.bound_claims }),
    ...(input.role === undefined ? {} : { role: input.role }),
    ...(input.scopes === undefined
      ? {}
      : {
          scopes: input.scopes.map((s) => ({
            namespace: s.namespace,
            read: s.read ?? false,
            write: s.write ?? false,
          })),
        }),
    ...(input.groups_claim === undefined ? {} : { groups_claim: input.groups_claim }),
    ...(input.group_roles === undefined ? {} : { group_roles: input.group_roles }),
    ...(input.oidc === undefined
      ? {}
      : {
          oidc: {
            ...input.oidc,
            scopes: [...new Set(['openid', ...(input.oidc.scopes ?? DEFAULT_OIDC_SCOPES)])],
          },
        }),
    ttl,
    max_ttl: maxTtl,
    ...(input.claims_to_metadata === undefined
      ? {}
      : { claims_to_metadata: input.claims_to_metadata }),
    updated_at: new Date(server.now()).toISOString(),
  };
}
