/**
 * The web console's sign-in through the company's OpenID Provider: Coffer is the provider's confidential
 * client (its secret in the login role), with PKCE, the server side of the identity issue's people flow
 * (auth/oidc-login.ts).
 *
 *   GET /v1/console/oidc/start?role=NAME[&token_role=ROLE]   → 303 to the provider, with a short-lived
 *        HttpOnly cookie (SameSite=Lax, so it comes back with the provider's redirect; path
 *        /v1/console/oidc/) holding this sign-in's PKCE verifier, state and nonce
 *   GET /v1/console/oidc/callback?code&state&iss            → the cookie's state must be the query's
 *        (constant time: no other browser's sign-in lands here); Coffer trades the code, the ID token is
 *        checked as every login's, and the token it buys becomes a console session (via: oidc, its token
 *        revoked at sign-out) → 303 to /ui/
 * Any failure goes back to the console (/ui/#/sign-in-failed/<reason>), which says what to do; the reason
 * is also in the audit entry.
 */
import { createHash } from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { Request, Response } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import { text } from '../../api/query-params.js';
import type { Responder } from '../../api/respond.js';
import { sameText } from '../../crypto/constant-time.js';
import { randomBytes } from '../../crypto/random.js';
import { AppError } from '../../errors.js';
import { ROLE_NAME } from '../../model/policies.js';
import { LoginRefused } from '../jwt-login.js';
import type { OidcLogin } from '../oidc-login.js';
import type { ConsoleCookies } from './console-cookie.js';
import type { LoginGate } from './login.js';

export interface ConsoleOidcDeps {
  readonly cookies: ConsoleCookies;
  readonly oidc: OidcLogin;
  readonly loginGate: LoginGate;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
  /** The address people reach Coffer at (COFFER_PUBLIC_URL), when set: the callback is built from it. */
  readonly publicUrl: string | null;
  readonly now: () => number;
}

/** What the start hands the callback, in the pending cookie. */
interface Pending {
  readonly role: string;
  /** The session's key, which the page that started this sign-in made and keeps. */
  readonly key: string;
  readonly token_role?: string;
  readonly verifier: string;
  readonly state: string;
  readonly nonce: string;
  readonly at: number;
}

const PENDING_PATH = '/v1/console/oidc/';
const PENDING_MS = 10 * 60_000;
const CALLBACK = '/v1/console/oidc/callback';

const LOCATION = {
  Location: { description: 'where the browser goes next', schema: { type: 'string' } },
} as const;

/** A session key the page made: 32 random bytes, base64url (as the server's own CSRF tokens are). */
const SESSION_KEY = /^[A-Za-z0-9_-]{43}$/;

const START_QUERY = {
  role: text({ pattern: ROLE_NAME.source, description: 'the login role' }),
  key: text({
    pattern: SESSION_KEY.source,
    description:
      "the session's key (its CSRF token) that the page made and keeps (32 random bytes, base64url): the session this sign-in opens takes it, so only the page that started the sign-in can use it",
  }),
  token_role: text({
    pattern: ROLE_NAME.source,
    description: 'which of the roles the groups give, when they give several',
  }),
};

const CALLBACK_QUERY = {
  code: text({ maxLength: 4096 }),
  state: text({ maxLength: 256 }),
  iss: text({ maxLength: 1024 }),
  error: text({ maxLength: 256 }),
  error_description: text({ maxLength: 1024 }),
};

const random = (): string => randomBytes(32).toString('base64url');

export function consoleOidcOperations(deps: ConsoleOidcDeps): Operation[] {
  const { cookies, oidc, loginGate, respond, recordIntent, publicUrl, now } = deps;
  // The browser reaches Coffer over HTTPS (its own TLS, or a public_url of https): Secure cookies.
  const secure = (): boolean => cookies.secure;
  const pendingName = (): string => (secure() ? '__Secure-coffer_oidc' : 'coffer_oidc');
  /**
   * Where the provider sends the person back: the public address when one is set (behind a proxy that ends
   * TLS, the request says neither the scheme nor, perhaps, the host people use), else this server as the
   * browser reached it.
   */
  const callbackOf = (req: Request): string =>
    publicUrl !== null
      ? `${publicUrl}${CALLBACK}`
      : `${secure() ? 'https' : 'http'}://${req.headers.host ?? ''}${CALLBACK}`;

  const setPending = (res: Response, value: string, maxAge: number) =>
    res.setHeader(
      'Set-Cookie',
      stringifySetCookie(pendingName(), value, {
        httpOnly: true,
        // Lax: the provider's redirect back is a top-level navigation from its site.
        sameSite: 'lax',
        path: PENDING_PATH,
        secure: secure(),
        maxAge,
      }),
    );

  const pendingOf = (req: Request): Pending | undefined => {
    const header = req.headers.cookie;
    const text = header === undefined ? undefined : parseCookie(header)[pendingName()];
    if (text === undefined) return undefined;
    try {
      const pending = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Pending;
      return typeof pending.state === 'string' &&
        typeof pending.key === 'string' &&
        SESSION_KEY.test(pending.key) &&
        now() - pending.at < PENDING_MS
        ? pending
        : undefined;
    } catch {
      return undefined;
    }
  };

  /** Back to the console, saying why the sign-in did not happen. */
  const failed = (res: Response, reason: string) =>
    respond.empty(res, 303, [['Location', `/ui/#/sign-in-failed/${encodeURIComponent(reason)}`]]);

  const reasonOf = (err: unknown): string => {
    if (err instanceof LoginRefused) return err.reason;
    const issue = err instanceof AppError ? err.issues?.[0] : undefined;
    if (issue?.field === '/token_role')
      return `choose-role:${issue.message.replace(/^one of: /, '')}`;
    if (issue?.field === '/redirect_uri') return 'redirect_not_allowed';
    if (err instanceof AppError && err.code === 'too_many_requests') return 'too_many_requests';
    throw err;
  };

  /** A refused step: its reason (and what was learnt) in the audit entry, the person back at the console. */
  async function refused(req: Request, res: Response, err: unknown, facts: object): Promise<void> {
    const reason = reasonOf(err);
    auditTarget(res, { ...facts, reason: reason.split(':')[0]! });
    if (err instanceof LoginRefused) await loginGate.refused(req, res);
    failed(res, reason);
  }

  const start: Operation<typeof START_QUERY> = {
    method: 'GET',
    template: '/v1/console/oidc/start',
    action: 'console.oidc_start',
    public: true,
    query: START_QUERY,
    docs: [
      {
        operationId: 'consoleOidcStart',
        summary:
          "The console's sign-in through the login role's OpenID Provider: 303 to the provider, with a short-lived HttpOnly cookie holding this sign-in's PKCE verifier, state and nonce. The provider comes back to /v1/console/oidc/callback, which must be allowed by the login role (loopback, or listed in oidc.redirect_uris)",
        responses: {
          303: {
            description: "To the provider's sign-in, or back to the console",
            headers: LOCATION,
          },
        },
      },
    ],
    async handler(req, res, { query }) {
      const role = query.role;
      if (role === undefined) {
        failed(res, 'no_login_role');
        return;
      }
      if (query.key === undefined) {
        failed(res, 'no_session_key');
        return;
      }
      auditTarget(res, { login_role: role });
      try {
        await loginGate.before(req, res);
        const pending: Pending = {
          role,
          key: query.key,
          ...(query.token_role === undefined ? {} : { token_role: query.token_role }),
          verifier: random(),
          state: random(),
          nonce: random(),
          at: now(),
        };
        const facts = {};
        const { auth_url } = await oidc.start(
          role,
          {
            redirect_uri: callbackOf(req),
            code_challenge: createHash('sha256').update(pending.verifier).digest('base64url'),
            state: pending.state,
            nonce: pending.nonce,
          },
          facts,
        );
        auditTarget(res, facts);
        setPending(
          res,
          Buffer.from(JSON.stringify(pending)).toString('base64url'),
          PENDING_MS / 1000,
        );
        respond.empty(res, 303, [['Location', auth_url]]);
      } catch (err) {
        await refused(req, res, err, {});
      }
    },
  };

  const callback: Operation<typeof CALLBACK_QUERY> = {
    method: 'GET',
    template: CALLBACK,
    action: 'console.oidc',
    public: true,
    query: CALLBACK_QUERY,
    docs: [
      {
        operationId: 'consoleOidcCallback',
        summary:
          "Where the provider sends the person back: with this browser's pending sign-in (its cookie) and a state that matches it, Coffer trades the code and signs the console in (303 to /ui/, the session cookie set); else 303 back to the console saying why",
        responses: {
          303: { description: 'To the console, signed in or saying why not', headers: LOCATION },
        },
      },
    ],
    async handler(req, res, { query }) {
      const pending = pendingOf(req);
      setPending(res, '', 0);
      if (!pending || query.state === undefined || !sameText(pending.state, query.state)) {
        auditTarget(res, { reason: 'state_mismatch' });
        failed(res, 'state_mismatch');
        return;
      }
      auditTarget(res, { login_role: pending.role });
      if (query.error !== undefined || query.code === undefined) {
        auditTarget(res, { reason: 'provider_refused' });
        failed(res, 'provider_refused');
        return;
      }
      const facts = {};
      try {
        await loginGate.before(req, res);
        const created = await oidc.callback(
          pending.role,
          {
            redirect_uri: callbackOf(req),
            code: query.code,
            state: pending.state,
            ...(query.iss === undefined ? {} : { iss: query.iss }),
            code_verifier: pending.verifier,
            nonce: pending.nonce,
            ...(pending.token_role === undefined ? {} : { token_role: pending.token_role }),
          },
          facts,
          (id) => recordIntent(res, { action: 'token.create', subject_token_id: id }),
        );
        const signedIn = await cookies.sessions.signInAs(created.id, 'oidc', pending.key);
        auditTarget(res, { ...facts, subject_token_id: created.id });
        res.locals.principal = signedIn.principal;
        res.locals.console = signedIn;
        // Both cookies: the pending one cleared (above), the session's set.
        res.setHeader('Set-Cookie', [
          String(res.getHeader('Set-Cookie')),
          cookies.cookieFor(signedIn.sessionId),
        ]);
        respond.empty(res, 303, [['Location', '/ui/']]);
      } catch (err) {
        await refused(req, res, err, facts);
      }
    },
  };

  return [start, callback] as Operation[];
}
