/**
 * A Coffer token got by JWT login (POST /v1/auth/login/jwt) instead of one handed over by a person: the JWT
 * is read from a file the platform keeps fresh (a Kubernetes projected service-account token, a CI job's
 * OIDC token), again at each login, since the platform rotates it. The session logs in again once two thirds
 * of its token's life have passed, or at once when the server refuses the token (revoked, its login role
 * changed); callers waiting at the same time share one login.
 */
import type { ApiCreatedToken } from '../api/response-schemas.js';
import { readCredential } from './credential-file.js';

export interface JwtLogin {
  /** The login role to log in under. */
  readonly role: string;
  /** The file holding the JWT (read at each login). */
  readonly jwtFile: string;
  /**
   * Where a token got by login is kept for later processes (the coffer command's is owner-only files): a
   * short-lived command reuses it while it has a third of its life left, instead of a login each run.
   */
  readonly cache?: TokenCache;
}

/** Tokens kept by who they were issued to: the login role and the JWT's issuer, subject and audience. */
export interface TokenCache {
  read(identity: string): { readonly token: string; readonly renewAt: number } | undefined;
  write(identity: string, entry: { readonly token: string; readonly renewAt: number }): void;
  forget(identity: string): void;
}

type LoginCall = (role: string, jwt: string) => Promise<ApiCreatedToken>;

export class JwtSession {
  private current: { readonly token: string; readonly renewAt: number } | undefined;
  private pending: Promise<string> | undefined;
  /** Logins made, for a caller's diagnostics. */
  logins = 0;

  constructor(
    private readonly source: JwtLogin,
    private readonly login: LoginCall,
    private readonly now: () => number = Date.now,
  ) {}

  /** The token to send: the current one while it has a third of its life left, else a new login's. */
  token(): Promise<string> {
    if (this.current && this.now() < this.current.renewAt)
      return Promise.resolve(this.current.token);
    this.pending ??= this.fresh().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The cache's key for the JWT in the file now: the login role, and the JWT's iss, sub and aud. */
  private identity: string | undefined;

  /**
   * The server refused `token` (401): whether sending again may help — a newer token is on hand or one is
   * fetched now. Once per token: a token refused right after its login does not start another.
   */
  refused(token: string): boolean {
    if (this.current?.token !== token)
      return this.current !== undefined || this.pending !== undefined;
    this.current = undefined;
    if (this.identity !== undefined) this.source.cache?.forget(this.identity);
    return true;
  }

  private async fresh(): Promise<string> {
    const jwt = await readCredential(this.source.jwtFile, 'the JWT file');
    const { cache } = this.source;
    const identity = cache ? identityOf(this.source.role, jwt) : undefined;
    this.identity = identity;
    // A token an earlier process got for this same JWT identity, still well within its life.
    const kept = identity === undefined ? undefined : cache!.read(identity);
    if (kept && this.now() < kept.renewAt) {
      this.current = kept;
      return kept.token;
    }
    const started = this.now();
    const created = await this.login(this.source.role, jwt);
    this.logins++;
    // Renewed by logging in again (the file's JWT may be a new one by then), not by /renew.
    this.current = { token: created.token, renewAt: started + (created.expires_in * 1000 * 2) / 3 };
    if (identity !== undefined) cache!.write(identity, this.current);
    return created.token;
  }
}

/**
 * Who a JWT says it is, as a cache key (read, not verified: the server verifies every use of the token
 * kept under it): the login role, and its iss, sub and aud. Undefined for a JWT that does not decode.
 */
function identityOf(role: string, jwt: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'));
    return JSON.stringify([role, payload.iss ?? null, payload.sub ?? null, payload.aud ?? null]);
  } catch {
    return undefined;
  }
}
