/**
 * The web console's session cookie: an HttpOnly, SameSite=Strict cookie holding the session id (Secure and
 * named `__Host-coffer_session` when the browser comes over HTTPS — Coffer's own TLS, or an https
 * COFFER_PUBLIC_URL — so no other path or subdomain can set it), never the token. A
 * request with the cookie and no Authorization header acts as the session's token (auth/console-sessions.ts);
 * one that changes something must also carry the session's CSRF token in X-Coffer-CSRF.
 */
import { parseCookie, stringifySetCookie } from 'cookie';
import type { Request, Response } from 'express';
import { AppError } from '../../errors.js';
import { unauthorized } from '../authenticator.js';
import { ConsoleSessions } from '../console-sessions.js';
import type { ConsoleCookie } from './authenticate.js';

/** Methods that change nothing: no CSRF token needed. */
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export const CSRF_HEADER = 'x-coffer-csrf';

export class ConsoleCookies implements ConsoleCookie {
  readonly name: string;

  constructor(
    readonly sessions: ConsoleSessions,
    /** The browser reaches Coffer over HTTPS: the cookies are Secure. */
    readonly secure: boolean,
  ) {
    this.name = secure ? '__Host-coffer_session' : 'coffer_session';
  }

  /**
   * The session id the request's cookie holds. A request carrying two cookies of this name is refused
   * (401): over plain HTTP, a page on another port of the same host can set one with a narrower Path, which
   * the browser sends first — the signed-in console would act as that other session (cookie tossing). TLS,
   * with its `__Host-` name, is the deployment that prevents the planting (docs/console.md).
   */
  sessionOf(req: Request): string | undefined {
    const header = req.headers.cookie;
    if (header === undefined) return undefined;
    const named = header
      .split(';')
      .filter((pair) => pair.slice(0, pair.indexOf('=')).trim() === this.name).length;
    if (named > 1)
      throw unauthorized(
        `the request carries ${named} ${this.name} cookies: one was set by another page of this host; sign out, clear this site's cookies and sign in again`,
      );
    return parseCookie(header)[this.name];
  }

  async authenticate(req: Request, res: Response, sessionId: string): Promise<void> {
    const session = await this.sessions.resolve(sessionId);
    const presented = req.headers[CSRF_HEADER];
    if (
      !SAFE.has(req.method) &&
      !ConsoleSessions.csrfMatches(
        session.record,
        typeof presented === 'string' ? presented : undefined,
      )
    )
      throw new AppError(
        'forbidden',
        "a console call that changes something must carry the session's X-Coffer-CSRF header",
      );
    res.locals.principal = session.principal;
    res.locals.console = session;
    res.locals.reauthenticate = async () => (await this.sessions.resolve(sessionId)).principal;
  }

  /** The Set-Cookie value that hands the browser its session's cookie. */
  cookieFor(sessionId: string): string {
    return stringifySetCookie(this.name, sessionId, this.attributes());
  }

  /** Hands the browser its session's cookie. */
  set(res: Response, sessionId: string): void {
    res.setHeader('Set-Cookie', this.cookieFor(sessionId));
  }

  /** Has the browser forget it. */
  clear(res: Response): void {
    res.setHeader(
      'Set-Cookie',
      stringifySetCookie(this.name, '', { ...this.attributes(), expires: new Date(0) }),
    );
  }

  private attributes() {
    return { httpOnly: true, sameSite: 'strict', path: '/', secure: this.secure } as const;
  }
}
