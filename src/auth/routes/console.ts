/**
 * /v1/console/sign-in, /v1/console/session and /v1/console/sign-out: the web console's sign-in with a token,
 * its session, and its sign-out (auth/console-sessions.ts, auth/routes/console-cookie.ts; the sign-in through an
 * OpenID Provider is console-oidc.ts). The token a person signs in with is sent once, in the body; from then
 * on the browser holds only the session cookie, and the page's script only the session's CSRF token.
 */
import type { Response } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import { roleOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';
import { consoleSession, ok } from '../../api/response-schemas.js';
import { type ConsoleSignInRequest, consoleSignInSchema } from '../../api/schemas.js';
import { AppError, invalid } from '../../errors.js';
import type { ConsoleSessionRecord } from '../../store/console-session-records.js';
import type { Principal } from '../principal.js';
import type { TokenService } from '../token-service.js';
import type { ConsoleCookies } from './console-cookie.js';
import type { LoginGate } from './login.js';

export interface ConsoleRouteDeps {
  readonly cookies: ConsoleCookies;
  /** An OIDC sign-in's token is revoked at sign-out. */
  readonly tokens: Pick<TokenService, 'revokeSelf'>;
  readonly recordIntent: RecordIntent;
  readonly loginGate: LoginGate;
  /** Seconds of disuse after which a session ends. */
  readonly idleTimeoutSeconds: number;
  readonly respond: Responder;
}

export function consoleOperations({
  cookies,
  loginGate,
  idleTimeoutSeconds,
  tokens,
  respond,
  recordIntent,
}: ConsoleRouteDeps): Operation[] {
  const view = (principal: Principal, record: ConsoleSessionRecord) => ({
    signed_in: true,
    csrf: record.csrf,
    token_id: principal.id,
    role: roleOf(principal),
    is_root: principal.isRoot,
    via: record.via,
    expires_at: new Date(record.expires_at).toISOString(),
    idle_timeout_seconds: idleTimeoutSeconds,
  });

  const sessionOf = (res: Response) => {
    const session = res.locals.console;
    if (!session)
      throw invalid('this call is for a console session (its cookie), not a bearer token');
    return session;
  };

  const signIn: Operation<never, ConsoleSignInRequest> = {
    method: 'POST',
    template: '/v1/console/sign-in',
    action: 'console.sign_in',
    public: true,
    body: { schema: consoleSignInSchema, required: true },
    docs: [
      {
        operationId: 'consoleSignIn',
        summary:
          "The web console's sign-in with a token: the answer sets the session cookie (HttpOnly, SameSite=Strict; the token never reaches the page again) and gives the session's key (its CSRF token), which every call with the cookie must carry in X-Coffer-CSRF (a cookie without it acts as nobody). A refused token is 401, as in Authorization",
        responses: { 201: ok('The session (its id is in the cookie only)', consoleSession) },
        errors: [401, 429],
      },
    ],
    async handler(req, res, input) {
      await loginGate.before(req, res);
      const { token } = await input.body();
      let signedIn: Awaited<ReturnType<ConsoleCookies['sessions']['signIn']>>;
      try {
        signedIn = await cookies.sessions.signIn(token, res.locals.client ?? '', 'token');
      } catch (err) {
        await loginGate.refused(req, res);
        throw err;
      }
      // Audited as the token that signed in, marked as the console's.
      res.locals.principal = signedIn.principal;
      res.locals.console = signedIn;
      cookies.set(res, signedIn.sessionId);
      res.setHeader('Cache-Control', 'no-store');
      respond.json(res, 201, view(signedIn.principal, signedIn.record));
    },
  };

  const current: Operation = {
    method: 'GET',
    template: '/v1/console/session',
    action: 'console.session',
    public: true,
    docs: [
      {
        operationId: 'consoleSession',
        summary:
          'Whether the request carries a live console session with its key (the CSRF token, in X-Coffer-CSRF, which the page keeps from its sign-in), and if so the session (the page asks when it loads, and when it has been unused for the idle timeout). A session cookie without its key is answered signed_in: false and cleared: another page set it. Asking is not a use: it does not hold the session from its idle timeout. Always 200, so a signed-out page logs no error',
        responses: { 200: ok('The session, or signed_in: false', consoleSession) },
      },
    ],
    async handler(req, res) {
      res.setHeader('Cache-Control', 'no-store');
      // Two session cookies: no session here (every call would be refused; the page signs in again).
      const sessionId = (() => {
        try {
          return cookies.sessionOf(req);
        } catch (err) {
          if (err instanceof AppError && err.code === 'unauthorized') return undefined;
          throw err;
        }
      })();
      let session: Awaited<ReturnType<ConsoleCookies['sessions']['resolve']>> | undefined;
      if (sessionId !== undefined)
        session = await cookies.sessions
          .resolve(sessionId, { touch: false })
          .catch((err: unknown) => {
            if (err instanceof AppError && err.code === 'unauthorized') return undefined;
            throw err;
          });
      // A session cookie without this page's key for it was set by another page (or this page lost the
      // key): no session here, and the cookie goes, so the planted one is gone from the browser too.
      if (!session || !cookies.keyMatches(req, session.record)) {
        if (sessionId !== undefined) cookies.clear(res);
        respond.json(res, 200, { signed_in: false });
        return;
      }
      res.locals.principal = session.principal;
      res.locals.console = session;
      respond.json(res, 200, view(session.principal, session.record));
    },
  };

  const signOut: Operation = {
    method: 'POST',
    template: '/v1/console/sign-out',
    action: 'console.sign_out',
    docs: [
      {
        operationId: 'consoleSignOut',
        summary:
          'Sign out of the console: the session ends on every worker and server at once, its cookie is cleared, and the token of an OIDC sign-in is revoked (needs X-Coffer-CSRF)',
        responses: { 204: { description: 'Signed out' } },
        errors: [400],
      },
    ],
    async handler(req, res) {
      const session = sessionOf(res);
      const sessionId = cookies.sessionOf(req);
      if (sessionId !== undefined) await cookies.sessions.signOut(sessionId);
      // The token an OIDC sign-in bought was the session's alone: it goes with it.
      if (session.record.via === 'oidc') {
        auditTarget(res, { subject_token_id: session.principal.id });
        await tokens.revokeSelf(session.principal, (id, also) =>
          recordIntent(res, {
            action: 'token.revoke',
            subject_token_id: id,
            also_revoked: also?.length ? also : undefined,
          }),
        );
      }
      cookies.clear(res);
      respond.empty(res, 204);
    },
  };

  return [signIn, current, signOut] as Operation[];
}
