/**
 * JWT login (POST /v1/auth/login/jwt): a workload trades a JWT its platform gave it — a Kubernetes
 * service-account token, a GitHub Actions OIDC token, any OIDC issuer's ID token — for a Coffer token, as a
 * login role says (model/policies.ts). In order, each refusal with its own reason (for the audit log only;
 * the caller gets one 401 that tells an attacker nothing):
 *   too_large          over the size limit, before anything is parsed
 *   unknown_role       no login role by that name
 *   malformed          not a compact JWS
 *   alg_not_allowed    not RS256/384/512, PS256/384/512, ES256/384/512 or EdDSA: `none` and HMAC never,
 *                      whatever the token says (an HS256 token "signed" with the issuer's public key, too)
 *   issuer_unreachable the issuer's keys cannot be had (nor a set fetched within jwks max stale)
 *   unknown_kid        no key for the JWT's `kid`, after the one refresh the interval allows
 *   bad_signature      no key of the issuer verifies it
 *   expired, not_yet_valid, issued_in_future   `exp`, `nbf`, `iat` against now, with the bounded leeway
 *   wrong_issuer, wrong_audience, claim_missing (exp, sub), claim_invalid
 *   subject_mismatch, claim_mismatch (bound_subject, bound_claims)
 *   claim_ambiguous    a claim path the JWT answers two ways that disagree (a flat `kubernetes.io.namespace`
 *                      beside the nested one)
 *   claim_widens_scope a templated scope's claim is not one namespace segment
 *   role_missing       the login role's role no longer exists
 *   no_group_role      with group_roles: the caller's groups name no role, and the login role gives none
 *                      beside them
 * With group_roles, a caller whose groups name several roles chooses one (`token_role`); not choosing, or
 * choosing one they do not hold, is a 400 naming the roles they may choose (role_choice_needed,
 * role_not_granted in the audit entry): the JWT was good, so this is theirs to know.
 */
import type { KeyObject } from 'node:crypto';
import {
  decodeProtectedHeader,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwtVerify,
} from 'jose';
import { AppError, invalid } from '../errors.js';
import { globMatches } from '../model/glob.js';
import type { LoginRole } from '../model/policies.js';
import { METADATA_LIMITS, type TokenMetadata } from '../model/tokens.js';
import type { Scope } from './access.js';
import { AmbiguousClaim, type Claims, claimAt, claimMatches, fillTemplate } from './claims.js';
import { type KeySets, KeysUnavailable } from './key-sets.js';
import { publicKeyOf } from './login-roles.js';
import { parsePattern } from './patterns.js';
import type { PrincipalFactory } from './principal.js';
import type { BeforeTokenCommit, TokenService, TokenView } from './token-service.js';

/** The signature algorithms a JWT may use; anything else is refused before a key is looked for. */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

export type RefusalReason =
  | 'too_large'
  | 'unknown_role'
  | 'malformed'
  | 'alg_not_allowed'
  | 'issuer_unreachable'
  | 'unknown_kid'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'issued_in_future'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'claim_missing'
  | 'claim_invalid'
  | 'subject_mismatch'
  | 'claim_mismatch'
  | 'claim_ambiguous'
  | 'claim_widens_scope'
  | 'role_missing'
  | 'no_group_role'
  | 'role_choice_needed'
  | 'role_not_granted'
  | 'oidc_not_enabled'
  | 'code_refused'
  | 'client_refused'
  | 'id_token_invalid';

/** What the audit entry of a login says: never the JWT. */
export interface LoginFacts {
  login_role?: string;
  issuer?: string;
  /** The JWT's `sub`, once its signature and claims are verified. */
  subject?: string;
  /** Why it was refused. */
  reason?: RefusalReason;
  /** The claim a refusal is about (a name, never its value). */
  claim?: string;
}

/** A refused login: one 401 for the caller; the reason and the facts go to the audit entry. */
export class LoginRefused extends AppError {
  constructor(
    readonly reason: RefusalReason,
    readonly claim?: string,
  ) {
    super(
      'unauthorized',
      'the JWT was not accepted for this login role (the audit log entry of this request says why)',
      undefined,
      { 'WWW-Authenticate': 'Bearer realm="coffer", error="invalid_token"' },
    );
  }
}

export interface JwtLoginDeps {
  readonly principals: Pick<PrincipalFactory, 'loginRole' | 'hasRole'>;
  readonly keySets: Pick<KeySets, 'keysFor'>;
  readonly tokens: Pick<TokenService, 'issueForLogin'>;
  readonly maxJwtBytes: number;
  readonly leewaySeconds: number;
  readonly now: () => number;
}

const ALLOWED = new Set<string>(JWT_ALGORITHMS);

export class JwtLogin {
  constructor(private readonly deps: JwtLoginDeps) {}

  /**
   * The token a login buys, or LoginRefused. `facts` is filled as the login goes, for its audit entry;
   * `beforeCommit` is the audit intent of the token's creation.
   */
  async login(
    roleName: string,
    jwt: string,
    facts: LoginFacts,
    beforeCommit?: BeforeTokenCommit,
    tokenRole?: string,
  ): Promise<TokenView & { token: string; expires_in: number }> {
    const { deps } = this;
    if (jwt.length > deps.maxJwtBytes) throw new LoginRefused('too_large');
    const role = deps.principals.loginRole(roleName);
    if (!role) throw new LoginRefused('unknown_role');
    facts.issuer = role.issuer;
    const payload = await this.verify(role, jwt);
    const subject = payload.sub!;
    facts.subject = subject;
    const claims = payload as Claims;
    if (role.bound_subject !== undefined && !globMatches(role.bound_subject, subject))
      throw new LoginRefused('subject_mismatch', 'sub');
    let grant: ReturnType<JwtLogin['grantOf']>;
    let metadata: TokenMetadata;
    try {
      for (const [path, accepted] of Object.entries(role.bound_claims ?? {}))
        if (!claimMatches(claims, path, accepted)) throw new LoginRefused('claim_mismatch', path);
      grant = this.grantOf(role, claims, facts, tokenRole);
      metadata = metadataOf(role, roleName, subject, claims);
    } catch (err) {
      if (err instanceof AmbiguousClaim) throw new LoginRefused('claim_ambiguous', err.path);
      throw err;
    }
    return deps.tokens.issueForLogin(
      {
        ...grant,
        metadata,
        ttl: role.ttl,
        maxTtl: role.max_ttl,
        login: { role: roleName, roleId: role.id, issuer: role.issuer, subject },
      },
      beforeCommit,
    );
  }

  private async verify(role: LoginRole, jwt: string): Promise<JWTPayload> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(jwt);
    } catch {
      throw new LoginRefused('malformed');
    }
    if (typeof header.alg !== 'string' || !ALLOWED.has(header.alg))
      throw new LoginRefused('alg_not_allowed');
    const options: JWTVerifyOptions = {
      algorithms: [...JWT_ALGORITHMS],
      issuer: role.issuer,
      audience: [...role.bound_audiences],
      clockTolerance: this.deps.leewaySeconds,
      requiredClaims: ['exp', 'sub'],
      currentDate: new Date(this.deps.now()),
    };
    let payload: JWTPayload;
    try {
      payload =
        role.public_keys !== undefined
          ? await verifyWithAny(jwt, header.kid, role.public_keys, options)
          : (await jwtVerify(jwt, this.keysOf(role), options)).payload;
    } catch (err) {
      throw refusalOf(err);
    }
    if (typeof payload.sub !== 'string' || payload.sub === '')
      throw new LoginRefused('claim_invalid', 'sub');
    if (
      typeof payload.iat === 'number' &&
      payload.iat * 1000 > this.deps.now() + this.deps.leewaySeconds * 1000
    )
      throw new LoginRefused('issued_in_future', 'iat');
    return payload;
  }

  private givenRole(name: string): { role: string; scopes: null } {
    if (!this.deps.principals.hasRole(name)) throw new LoginRefused('role_missing');
    return { role: name, scopes: null };
  }

  private keysOf(role: LoginRole): JWTVerifyGetKey {
    const source =
      role.jwks_url !== undefined ? { jwksUrl: role.jwks_url } : { issuer: role.issuer };
    return this.deps.keySets.keysFor(source, role.ca_pem);
  }

  private grantOf(
    role: LoginRole,
    claims: Claims,
    facts: LoginFacts,
    tokenRole: string | undefined,
  ): { role: string | null; scopes: Scope[] | null } {
    const named = groupRolesOf(role, claims);
    const choices = named.length > 0 ? named : role.role !== undefined ? [role.role] : [];
    if (tokenRole !== undefined || choices.length > 1) {
      const chosen = tokenRole !== undefined && choices.includes(tokenRole) ? tokenRole : undefined;
      if (chosen === undefined) {
        facts.reason = tokenRole === undefined ? 'role_choice_needed' : 'role_not_granted';
        throw invalid(
          tokenRole === undefined
            ? 'your groups give you several roles: choose one (token_role)'
            : 'token_role is not a role this login gives you',
          [
            {
              field: '/token_role',
              in: 'body',
              message:
                choices.length > 0
                  ? `one of: ${choices.join(', ')}`
                  : 'this login gives scopes, not a role: leave token_role out',
            },
          ],
        );
      }
      return this.givenRole(chosen);
    }
    if (choices.length === 1) return this.givenRole(choices[0]!);
    if (role.scopes === undefined) throw new LoginRefused('no_group_role');
    const scopes = (role.scopes ?? []).map((scope) => {
      const filled = fillTemplate(scope.namespace, claims);
      if ('refused' in filled) throw new LoginRefused('claim_widens_scope', filled.refused);
      // A segment cannot make a pattern invalid, but the check costs nothing and guards the invariant.
      if (!parsePattern(filled.text)) throw new LoginRefused('claim_widens_scope');
      return { namespace: filled.text, read: scope.read, write: scope.write };
    });
    return { role: null, scopes };
  }
}

/** The roles a login role's group_roles give for the groups in the claims, in the order of group_roles. */
function groupRolesOf(role: LoginRole, claims: Claims): string[] {
  if (role.group_roles === undefined) return [];
  const value = claimAt(claims, role.groups_claim ?? 'groups');
  const groups = new Set(
    typeof value === 'string'
      ? [value]
      : Array.isArray(value)
        ? value.filter((g): g is string => typeof g === 'string')
        : [],
  );
  const roles = Object.entries(role.group_roles)
    .filter(([group]) => groups.has(group))
    .map(([, name]) => name);
  return [...new Set(roles)];
}

/** A login role's public key, imported once per process (with its kid when it is a JWK that has one). */
const importedKeys = new Map<string, { key: KeyObject; kid: unknown } | null>();

function importedKey(text: string): { key: KeyObject; kid: unknown } | null {
  let imported = importedKeys.get(text);
  if (imported === undefined) {
    const key = publicKeyOf(text);
    imported = key
      ? {
          key,
          kid: text.trim().startsWith('{')
            ? (JSON.parse(text) as { kid?: unknown }).kid
            : undefined,
        }
      : null;
    if (importedKeys.size >= 1000) importedKeys.delete(importedKeys.keys().next().value!);
    importedKeys.set(text, imported);
  }
  return imported;
}

/** With `public_keys`: the first key that verifies the signature decides (its claim checks included). */
async function verifyWithAny(
  jwt: string,
  kid: string | undefined,
  keys: readonly string[],
  options: JWTVerifyOptions,
): Promise<JWTPayload> {
  let last: unknown;
  for (const text of keys) {
    const imported = importedKey(text);
    if (!imported) continue;
    const { key, kid: jwkKid } = imported;
    if (kid !== undefined && jwkKid !== undefined && jwkKid !== kid) continue;
    try {
      return (await jwtVerify(jwt, key, options)).payload;
    } catch (err) {
      last = err;
      const code = (err as { code?: string }).code;
      // Another key may verify it; any other failure is the token's own.
      if (code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' && code !== 'ERR_JOSE_NOT_SUPPORTED')
        throw err;
    }
  }
  throw last ?? new KeysUnavailable('unknown_kid', 'no configured key matches the JWT');
}

function refusalOf(err: unknown): LoginRefused {
  if (err instanceof LoginRefused) return err;
  if (err instanceof KeysUnavailable) return new LoginRefused(err.reason);
  const { code, claim, reason } = err as { code?: string; claim?: string; reason?: string };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return new LoginRefused('expired', 'exp');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (reason === 'missing') return new LoginRefused('claim_missing', claim);
      if (claim === 'nbf') return new LoginRefused('not_yet_valid', 'nbf');
      if (claim === 'iat') return new LoginRefused('issued_in_future', 'iat');
      if (claim === 'iss') return new LoginRefused('wrong_issuer', 'iss');
      if (claim === 'aud') return new LoginRefused('wrong_audience', 'aud');
      return new LoginRefused('claim_invalid', claim);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return new LoginRefused('alg_not_allowed');
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return new LoginRefused('unknown_kid');
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return new LoginRefused('bad_signature');
    default:
      return new LoginRefused('malformed');
  }
}

/** The new token's metadata: `claims_to_metadata`, and a name saying whose login it was. */
function metadataOf(
  role: LoginRole,
  roleName: string,
  subject: string,
  claims: Claims,
): TokenMetadata {
  const metadata: Record<string, string> = {
    name: `login:${roleName}:${subject}`.slice(0, METADATA_LIMITS.name),
  };
  for (const [path, field] of Object.entries(role.claims_to_metadata ?? {})) {
    const value = claimAt(claims, path);
    const text =
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? String(value)
        : Array.isArray(value) && value.every((v) => typeof v === 'string')
          ? value.join(',')
          : undefined;
    if (text === undefined) continue;
    // Bounded as every token's metadata is: a longer claim is cut, one past the total is left out.
    const cut = text.slice(0, field === 'name' ? METADATA_LIMITS.name : METADATA_LIMITS.value);
    const before = metadata[field];
    metadata[field] = cut;
    if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_LIMITS.bytes) {
      if (before === undefined) delete metadata[field];
      else metadata[field] = before;
    }
  }
  return metadata;
}
