/**
 * The web console's session cookie: an HttpOnly, SameSite=Strict cookie holding the session id (Secure and
 * named `__Host-coffer_session` when the browser comes over HTTPS — Coffer's own TLS, or an https
 * COFFER_PUBLIC_URL — so no other path or subdomain can set it), never the token. A
 * request with the cookie and no Authorization header acts as the session's token (auth/console-sessions.ts)
 * only when it also carries the session's key, its CSRF token, in X-Coffer-CSRF — every request, reads too.
 * The page keeps that key where only its own origin reaches (localStorage: scheme, host and port), so a
 * session cookie planted by a page on another port of the same host over plain HTTP (cookie tossing: its
 * junk cookies push the victim's out of the jar, then it sets its own) comes without its key and acts as
 * nobody: the console does not become the planter's session.
 */
import { parseCookie, stringifySetCookie } from 'cookie';
import type { Request, Response } from 'express';
import { unauthorized } from '../authenticator.js';
import { ConsoleSessions } from '../console-sessions.js';
import type { ConsoleCookie } from './authenticate.js';

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
    if (!this.keyMatches(req, session.record))
      throw unauthorized(
        "the console session's cookie came without this page's key for it (X-Coffer-CSRF): it was set by another page, or this page lost its key; sign in again",
      );
    res.locals.principal = session.principal;
    res.locals.console = session;
    res.locals.reauthenticate = async () => (await this.sessions.resolve(sessionId)).principal;
  }

  /** Whether the request carries the session's key (its CSRF token) in X-Coffer-CSRF. */
  keyMatches(req: Request, record: Parameters<typeof ConsoleSessions.csrfMatches>[0]): boolean {
    const presented = req.headers[CSRF_HEADER];
    return ConsoleSessions.csrfMatches(
      record,
      typeof presented === 'string' ? presented : undefined,
    );
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
