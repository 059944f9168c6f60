/** The token calls: logins, who the token is, tokens created, listed, revoked and renewed (renewal.ts). */
import type {
  ApiCreatedToken,
  ApiOidcStart,
  ApiSelf,
  ApiToken,
  ApiTokenList,
} from '../api/response-schemas.js';
import type {
  LoginOidcCallbackRequest,
  LoginOidcStartRequest,
  TokenCreateRequest,
} from '../api/schemas.js';
import { KvCalls } from './kv-calls.js';
import { query } from './paths.js';
import { keepRenewed } from './renewal.js';

export class TokenCalls extends KvCalls {
  /**
   * A person's sign-in at the login role's OpenID Provider, step one (no token needed): the caller keeps
   * the PKCE verifier, state and nonce it drew, and opens the answer's `auth_url` in the person's browser.
   */
  oidcStart(
    request: LoginOidcStartRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiOidcStart> {
    return this.call({
      method: 'POST',
      path: '/v1/auth/login/oidc/start',
      body: request,
      authenticated: false,
      signal: options.signal,
    });
  }

  /** Step two: what the provider sent back to the redirect address, with the checks; the token it buys. */
  oidcCallback(
    request: LoginOidcCallbackRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiCreatedToken> {
    return this.call({
      method: 'POST',
      path: '/v1/auth/login/oidc/callback',
      body: request,
      authenticated: false,
      signal: options.signal,
    });
  }

  /** Who the token is and what it may do. */
  self(options: { signal?: AbortSignal } = {}): Promise<ApiSelf> {
    return this.call({ method: 'GET', path: '/v1/auth/me', signal: options.signal });
  }

  /** A new token (exactly one of role and scopes); its value is in this answer only. */
  createToken(
    request: TokenCreateRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiCreatedToken> {
    return this.call({
      method: 'POST',
      path: '/v1/auth/token',
      body: request,
      signal: options.signal,
    });
  }

  /** The tokens (active ones unless `all`); never their values. */
  listTokens(options: { all?: boolean; signal?: AbortSignal } = {}): Promise<ApiTokenList> {
    return this.call({
      method: 'GET',
      path: `/v1/auth/tokens${query({ all: options.all })}`,
      signal: options.signal,
    });
  }

  /** Revokes a token by its id (or its value); revoking one already revoked succeeds. */
  async revokeToken(idOrToken: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: `/v1/auth/token/${encodeURIComponent(idOrToken)}`,
      signal: options.signal,
    });
  }

  /** Renews the calling token: it expires its lifetime from now, never past creation + the server's max TTL. */
  renewSelf(options: { signal?: AbortSignal } = {}): Promise<ApiToken> {
    return this.call({ method: 'POST', path: '/v1/auth/token/renew', signal: options.signal });
  }

  /**
   * Keeps the calling token alive until `signal` aborts: renews it once two thirds of its remaining life have
   * passed, again and again, until a renewal no longer extends it (its creation + the server's max TTL) or
   * the token is refused. A renewal that fails for want of an answer is tried again with the client's retries
   * and then at the next third. Resolves when it stops; `onRenewed` hears of each new expiry.
   */
  keepRenewed(
    options: { signal?: AbortSignal; onRenewed?: (expiresAt: string) => void } = {},
  ): Promise<void> {
    // A JWT login session logs in again by itself.
    if (this.session) return Promise.resolve();
    return keepRenewed(this, options);
  }

  /** Revokes the calling token itself (not the root token); calls with it are refused from then on. */
  async revokeSelf(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.answer({
      method: 'POST',
      path: '/v1/auth/token/revoke-self',
      signal: options.signal,
    });
  }
}
