/**
 * A Coffer token got by JWT login (POST /v1/auth/login/jwt) instead of one handed over by a person: the JWT
 * is read from a file the platform keeps fresh (a Kubernetes projected service-account token, a CI job's
 * OIDC token), again at each login, since the platform rotates it. The session logs in again once two thirds
 * of its token's life have passed, or at once when the server refuses the token (revoked, its login role
 * changed); callers waiting at the same time share one login.
 */
import { readFile } from 'node:fs/promises';
import type { ApiCreatedToken } from '../http/response-schemas.js';
import { CofferError } from './errors.js';

export interface JwtLogin {
  /** The login role to log in under. */
  readonly role: string;
  /** The file holding the JWT (read at each login). */
  readonly jwtFile: string;
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

  /**
   * The server refused `token` (401): whether sending again may help — a newer token is on hand or one is
   * fetched now. Once per token: a token refused right after its login does not start another.
   */
  refused(token: string): boolean {
    if (this.current?.token !== token)
      return this.current !== undefined || this.pending !== undefined;
    this.current = undefined;
    return true;
  }

  private async fresh(): Promise<string> {
    const jwt = await readJwt(this.source.jwtFile);
    const started = this.now();
    const created = await this.login(this.source.role, jwt);
    this.logins++;
    // Renewed by logging in again (the file's JWT may be a new one by then), not by /renew.
    this.current = { token: created.token, renewAt: started + (created.expires_in * 1000 * 2) / 3 };
    return created.token;
  }
}

async function readJwt(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CofferError({
      status: 0,
      code: 'no_token',
      detail: `cannot read the JWT file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    });
  }
  const jwt = text.trim();
  if (jwt === '')
    throw new CofferError({ status: 0, code: 'no_token', detail: `the JWT file ${file} is empty` });
  return jwt;
}
