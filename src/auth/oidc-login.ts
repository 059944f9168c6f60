/**
 * People sign in through an OpenID Provider (POST /v1/auth/login/oidc/start, then /callback): the
 * authorization-code flow with PKCE, Coffer being the provider's client (openid-client). The server keeps no
 * state between the two calls: the caller (`coffer login --oidc`, the console) draws the PKCE verifier, the
 * state and the nonce, sends the challenge, state and nonce to /start, takes the person's browser to the
 * address it answers, and brings back what the provider sent to its redirect address with the verifier.
 * Coffer then trades the code at the provider's token endpoint (with its client secret, when it has one),
 * and the ID token it gets goes through the very checks a workload's JWT does (jwt-login.ts: signature from
 * the issuer's keys, iss, aud, exp, the login role's bounds, groups to roles), its nonce checked too.
 *
 * Refusals, beside jwt-login.ts's (each one 401; the reason in the audit entry):
 *   oidc_not_enabled   the login role has no `oidc` block
 *   code_refused       the provider would not trade the code (used, expired, another verifier or address)
 *   client_refused     the provider would not take Coffer's client credentials (the login role's
 *                      client_id or client_secret is wrong)
 *   id_token_invalid   the provider's answer held no usable ID token, or its nonce or state did not match
 * A redirect address that is neither loopback nor one of the login role's is a 400, before anything else.
 */
import * as client from 'openid-client';
import { invalid } from '../errors.js';
import type { LoginRole } from '../model/policies.js';
import { isLoopbackHttp, issuerFetch } from './issuer-http.js';
import { type JwtLogin, type LoginFacts, LoginRefused } from './jwt-login.js';
import type { PrincipalFactory } from './principal.js';
import type { BeforeTokenCommit, TokenView } from './token-service.js';

export interface OidcStart {
  readonly redirect_uri: string;
  readonly code_challenge: string;
  readonly state: string;
  readonly nonce: string;
}

export interface OidcCallback {
  readonly redirect_uri: string;
  readonly code: string;
  readonly state: string;
  readonly iss?: string;
  readonly code_verifier: string;
  readonly nonce: string;
  readonly token_role?: string;
}

export interface OidcLoginDeps {
  readonly principals: Pick<PrincipalFactory, 'loginRole'>;
  readonly jwtLogin: Pick<JwtLogin, 'login'>;
  /** Each request to the provider's time limit, and the largest answer taken. */
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** The provider's discovery document is fetched again once older than this. */
  readonly refreshMs: number;
  readonly now: () => number;
}

type OidcRole = LoginRole & { readonly oidc: NonNullable<LoginRole['oidc']> };

/** Whether the provider may send a person back to `uri` for this login role. */
function isRedirectAllowed(role: OidcRole, uri: string): boolean {
  if (role.oidc.redirect_uris?.includes(uri)) return true;
  if (!isLoopbackHttp(uri)) return false;
  const parsed = new URL(uri);
  // RFC 8252 §7.3: any port on the loopback; nothing that could carry parameters of its own.
  return parsed.search === '' && parsed.hash === '' && parsed.username === '';
}

export class OidcLogin {
  /** The provider's configuration per login role (its id and time: a replaced role is fetched anew). */
  private readonly configs = new Map<
    string,
    { readonly config: Promise<client.Configuration>; readonly at: number }
  >();

  constructor(private readonly deps: OidcLoginDeps) {}

  /** The provider's authorization address for the person's browser. */
  async start(
    roleName: string,
    input: OidcStart,
    facts: LoginFacts,
  ): Promise<{ auth_url: string }> {
    const role = this.roleOf(roleName, input.redirect_uri, facts);
    const config = await this.configOf(role);
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: input.redirect_uri,
      scope: role.oidc.scopes.join(' '),
      code_challenge: input.code_challenge,
      code_challenge_method: 'S256',
      state: input.state,
      nonce: input.nonce,
    });
    return { auth_url: url.href };
  }

  /** The token the person's sign-in buys, or LoginRefused. */
  async callback(
    roleName: string,
    input: OidcCallback,
    facts: LoginFacts,
    beforeCommit?: BeforeTokenCommit,
  ): Promise<TokenView & { token: string; expires_in: number }> {
    const role = this.roleOf(roleName, input.redirect_uri, facts);
    const config = await this.configOf(role);
    const current = new URL(input.redirect_uri);
    current.searchParams.set('code', input.code);
    current.searchParams.set('state', input.state);
    if (input.iss !== undefined) current.searchParams.set('iss', input.iss);
    let idToken: string | undefined;
    try {
      const answer = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: input.code_verifier,
        expectedState: input.state,
        expectedNonce: input.nonce,
        idTokenExpected: true,
      });
      idToken = answer.id_token;
    } catch (err) {
      throw refusalOf(err);
    }
    if (idToken === undefined) throw new LoginRefused('id_token_invalid');
    return this.deps.jwtLogin.login(roleName, idToken, facts, beforeCommit, input.token_role);
  }

  private roleOf(roleName: string, redirectUri: string, facts: LoginFacts): OidcRole {
    const role = this.deps.principals.loginRole(roleName);
    if (!role) throw new LoginRefused('unknown_role');
    facts.issuer = role.issuer;
    if (!role.oidc) throw new LoginRefused('oidc_not_enabled');
    const oidcRole = role as OidcRole;
    if (!isRedirectAllowed(oidcRole, redirectUri))
      throw invalid('redirect_uri is not allowed for this login role', [
        {
          field: '/redirect_uri',
          in: 'body',
          message:
            "must be http://127.0.0.1:PORT/PATH (or localhost, [::1]; any port, no query), or one of the login role's oidc.redirect_uris",
        },
      ]);
    return oidcRole;
  }

  private configOf(role: OidcRole): Promise<client.Configuration> {
    const { now, refreshMs } = this.deps;
    const name = `${role.id} ${role.updated_at}`;
    const held = this.configs.get(name);
    if (held && now() - held.at < refreshMs) return held.config;
    const config = this.discover(role);
    if (this.configs.size >= 1000) this.configs.delete(this.configs.keys().next().value!);
    this.configs.set(name, { config, at: now() });
    // A failed discovery is not kept: the next sign-in tries again.
    config.catch(() => {
      if (this.configs.get(name)?.config === config) this.configs.delete(name);
    });
    return config;
  }

  private async discover(role: OidcRole): Promise<client.Configuration> {
    const { client_id: clientId, client_secret: secret } = role.oidc;
    const fetcher = issuerFetch({
      timeoutMs: this.deps.timeoutMs,
      maxBytes: this.deps.maxBytes,
      ...(role.ca_pem === undefined ? {} : { ca: role.ca_pem }),
    });
    const insecure = isLoopbackHttp(role.issuer);
    let metadata: client.ServerMetadata;
    try {
      const found = await client.discovery(
        new URL(role.issuer),
        clientId,
        undefined,
        client.None(),
        {
          [client.customFetch]: fetcher as client.CustomFetch,
          ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
        },
      );
      metadata = found.serverMetadata();
    } catch {
      throw new LoginRefused('issuer_unreachable');
    }
    const config = new client.Configuration(
      metadata,
      clientId,
      undefined,
      clientAuthOf(secret, metadata.token_endpoint_auth_methods_supported),
    );
    config[client.customFetch] = fetcher as client.CustomFetch;
    if (insecure) client.allowInsecureRequests(config);
    return config;
  }
}

/** How Coffer proves itself at the token endpoint: Basic, the default every provider takes, unless it lists only post. */
function clientAuthOf(secret: string | undefined, methods: readonly string[] | undefined) {
  if (secret === undefined) return client.None();
  return methods !== undefined &&
    !methods.includes('client_secret_basic') &&
    methods.includes('client_secret_post')
    ? client.ClientSecretPost(secret)
    : client.ClientSecretBasic(secret);
}

function refusalOf(err: unknown): LoginRefused {
  const { code, error } = err as { code?: string; error?: string };
  switch (code) {
    case 'OAUTH_WWW_AUTHENTICATE_CHALLENGE':
      return new LoginRefused('client_refused');
    case 'OAUTH_RESPONSE_BODY_ERROR':
      return new LoginRefused(error === 'invalid_client' ? 'client_refused' : 'code_refused');
    case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
    case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
    case 'OAUTH_INVALID_RESPONSE':
    case 'OAUTH_PARSE_ERROR':
    case 'OAUTH_RESPONSE_IS_NOT_CONFORM':
    case 'OAUTH_RESPONSE_IS_NOT_JSON':
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
    case 'OAUTH_AUTHORIZATION_RESPONSE_ERROR':
      return new LoginRefused('id_token_invalid');
    default:
      return new LoginRefused('issuer_unreachable');
  }
}
