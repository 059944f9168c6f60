/**
 * /v1/auth/login/...: trading a proof of who the caller is for a token, without a token. A workload's JWT
 * (jwt), or a person's sign-in at an OpenID Provider (oidc/start, then oidc/callback). Every refusal is one
 * 401 whose reason goes to the audit entry only; an address past its rate of refusals gets 429.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { Request, Response } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { createdToken, oidcStart, ok } from '../../api/response-schemas.js';
import {
  type LoginJwtRequest,
  type LoginOidcCallbackRequest,
  type LoginOidcStartRequest,
  loginJwtSchema,
  loginOidcCallbackSchema,
  loginOidcStartSchema,
} from '../../api/schemas.js';
import { VAULT_ROOT, vaultAnswer } from '../../api/vault-dialect.js';
import { AppError } from '../../errors.js';
import { ROLE_NAME } from '../../model/policies.js';
import { type JwtLogin, type LoginFacts, LoginRefused } from '../jwt-login.js';
import type { OidcLogin } from '../oidc-login.js';
import type { BeforeTokenCommit, TokenView } from '../token-service.js';

/** Vault's login path under /vault/v1/auth: `{mount}/login`. */
const VAULT_LOGIN = /^([a-z0-9][a-z0-9_-]{0,62})\/login$/;

/** Vault's JWT login body: the login role (empty: the mount's) and the JWT. */
const vaultLoginSchema = Type.Object(
  {
    role: Type.Optional(Type.String({ maxLength: 64 })),
    jwt: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);
type VaultLoginRequest = Static<typeof vaultLoginSchema>;

/** The failure rate of logins, per client address (http-app.ts), as for refused tokens (authenticate.ts). */
export interface LoginGate {
  /** Refuses (429, held back) a login from an address past its failure rate, before its body is read. */
  before(req: Request, res: Response): Promise<void>;
  /** Holds back a refused login past the failure rate, and has it summarized in the audit log. */
  refused(req: Request, res: Response): Promise<void>;
}

export interface LoginRouteDeps {
  readonly login: JwtLogin;
  readonly oidc: OidcLogin;
  readonly loginGate: LoginGate;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
}

export function loginOperations({
  login,
  oidc,
  loginGate,
  respond,
  recordIntent,
}: LoginRouteDeps): Operation[] {
  /**
   * Runs one login: the gate first, then `attempt`; its facts (login role, issuer, subject, and why it was
   * refused) go to the audit entry, and a refusal past the address's rate is held back.
   */
  async function audited<T>(
    req: Request,
    res: Response,
    role: string,
    attempt: (facts: LoginFacts) => Promise<T>,
  ): Promise<T> {
    const facts: LoginFacts = {};
    if (ROLE_NAME.test(role)) facts.login_role = role;
    try {
      const result = await attempt(facts);
      auditTarget(res, {
        ...facts,
        ...((result as Partial<TokenView>).id === undefined
          ? {}
          : { subject_token_id: (result as TokenView).id }),
      });
      return result;
    } catch (err) {
      auditTarget(res, {
        ...facts,
        ...(err instanceof LoginRefused
          ? { reason: err.reason, ...(err.claim === undefined ? {} : { claim: err.claim }) }
          : {}),
      });
      if (err instanceof LoginRefused) await loginGate.refused(req, res);
      throw err;
    }
  }

  const intentOf =
    (res: Response): BeforeTokenCommit =>
    (id) =>
      recordIntent(res, { action: 'token.create', subject_token_id: id });

  /** A public login operation: the gate before its body is read, then `attempt`, audited. */
  function loginOperation<B extends { role?: string }, T extends object>(spec: {
    readonly template: string;
    readonly action: string;
    /** Vault's dialect (api/vault-dialect.ts), for Vault's login paths. */
    readonly dialect?: 'vault';
    /**
     * The login role when the body names none, from the request's path: called before the body is read,
     * so a path that is no login is refused as such, not for its body.
     */
    readonly roleOfPath?: (req: Request) => string;
    readonly schema: TSchema;
    readonly operationId: string;
    readonly summary: string;
    readonly status: 200 | 201;
    readonly answer: { readonly description: string; readonly schema: object };
    readonly attempt: (body: B, facts: LoginFacts, res: Response, role: string) => Promise<T>;
  }): Operation<never, B> {
    return {
      method: 'POST',
      template: spec.template,
      action: spec.action,
      ...(spec.dialect ? { dialect: spec.dialect } : {}),
      public: true,
      body: { schema: spec.schema, required: true },
      docs: [
        {
          operationId: spec.operationId,
          summary: spec.summary,
          responses: { [spec.status]: ok(spec.answer.description, spec.answer.schema) },
          errors: [400, 401, 429],
        },
      ],
      async handler(req, res, input) {
        await loginGate.before(req, res);
        const ofPath = spec.roleOfPath?.(req);
        const body = await input.body();
        const role = body.role === undefined || body.role === '' ? (ofPath ?? '') : body.role;
        const answer = await audited(req, res, role, (facts) =>
          spec.attempt(body, facts, res, role),
        );
        // Never kept by a cache: a token, or an address bound to this sign-in's checks.
        res.setHeader('Cache-Control', 'no-store');
        respond.json(res, spec.status, answer);
      },
    };
  }

  const newToken = {
    description: 'The new token; its value is shown only here',
    schema: createdToken,
  };

  const loginJwt = loginOperation<LoginJwtRequest, object>({
    template: '/v1/auth/login/jwt',
    action: 'login.jwt',
    schema: loginJwtSchema,
    operationId: 'loginJwt',
    summary:
      "Trade a JWT from a workload's platform (Kubernetes, GitHub Actions, any OIDC issuer) for a token, as a login role says. Every refusal is the same 401; the audit entry of the request says why. An address past its rate of refusals gets 429 (Retry-After) until it slows down",
    status: 201,
    answer: newToken,
    attempt: (body, facts, res) =>
      login.login(body.role, body.jwt, facts, intentOf(res), body.token_role),
  });

  const oidcStartOperation = loginOperation<LoginOidcStartRequest, object>({
    template: '/v1/auth/login/oidc/start',
    action: 'login.oidc_start',
    schema: loginOidcStartSchema,
    operationId: 'loginOidcStart',
    summary:
      "A person's sign-in through the login role's OpenID Provider, step one: the caller draws a PKCE verifier, a state and a nonce and keeps them; the answer is the provider's address to open in the person's browser. The server keeps nothing",
    status: 200,
    answer: { description: "The provider's authorization address", schema: oidcStart },
    attempt: (body, facts) => oidc.start(body.role, body, facts),
  });

  const oidcCallback = loginOperation<LoginOidcCallbackRequest, object>({
    template: '/v1/auth/login/oidc/callback',
    action: 'login.oidc',
    schema: loginOidcCallbackSchema,
    operationId: 'loginOidcCallback',
    summary:
      "Step two: what the provider sent to the redirect address (code, state, iss) with the PKCE verifier and the nonce. Coffer trades the code at the provider and checks the ID token as a JWT login's (the login role's bounds, groups to roles); the token it buys is answered as POST /v1/auth/token's. A person whose groups give several roles chooses one (token_role), else 400 naming them",
    status: 201,
    answer: newToken,
    attempt: (body, facts, res) => oidc.callback(body.role, body, facts, intentOf(res)),
  });

  /**
   * Vault's JWT and Kubernetes logins, `auth/{mount}/login {role, jwt}` (vault-action, GitLab CI, ESO's
   * vault provider, Vault Agent): Coffer's JWT login under the login role `role` — or, when none is given
   * (vault-action and GitLab send none), the login role named as the mount — answered as Vault answers.
   */
  const vaultLogin = loginOperation<VaultLoginRequest, object>({
    template: `${VAULT_ROOT}/auth/{path}`,
    action: 'vault.login',
    dialect: 'vault',
    schema: vaultLoginSchema,
    roleOfPath: (req) => {
      const mount = VAULT_LOGIN.exec(rawPath(req).slice(`${VAULT_ROOT}/auth/`.length))?.[1];
      // Not a login (auth/token/create, say): not served, whatever the body.
      if (mount === undefined) throw new AppError('not_found', 'no such login');
      return mount;
    },
    operationId: 'vaultLogin',
    summary: "Vault: a JWT login at auth/{mount}/login, answered with Vault's auth block",
    status: 200,
    answer: { description: "Vault's envelope with auth.client_token", schema: {} },
    attempt: async (body, facts, res, role) => {
      const made = await login.login(role, body.jwt, facts, intentOf(res));
      const policies = made.role === null ? ['scoped'] : [made.role];
      return {
        ...vaultAnswer(respond.requestId(res), null),
        auth: {
          client_token: made.token,
          accessor: made.id,
          policies,
          token_policies: policies,
          metadata: made.metadata,
          lease_duration: made.expires_in,
          renewable: true,
          entity_id: '',
          token_type: 'service',
          orphan: true,
        },
      };
    },
  });

  return [loginJwt, oidcStartOperation, oidcCallback, vaultLogin] as Operation[];
}
