/**
 * The TypeScript client: every endpoint of the API as a method, typed by the very declarations the server's
 * OpenAPI document is made from (api/response-schemas.ts for answers, api/schemas.ts for bodies; type
 * imports only, so the client loads nothing of the server). Only Node's own fetch; see transport.ts for
 * timeouts and retries and errors.ts for the one error class.
 *
 *   import { Coffer } from 'coffer/client';
 *   const coffer = new Coffer(); // COFFER_ADDR, and COFFER_TOKEN, COFFER_TOKEN_FILE, or a JWT login
 *                                // (COFFER_JWT_FILE with COFFER_LOGIN_ROLE, jwt-session.ts)
 *   const { value } = await coffer.get('payments/prod', 'db_password');
 */
import { readFile } from 'node:fs/promises';
import type {
  ApiAuditPage,
  ApiAuditPublicKey,
  ApiCreatedToken,
  ApiEntry,
  ApiEntryInfo,
  ApiHealth,
  ApiKeyringStatus,
  ApiListing,
  ApiLoginRole,
  ApiLoginRoleList,
  ApiMigration,
  ApiNamespaceValues,
  ApiOidcStart,
  ApiRetirement,
  ApiRewrap,
  ApiRole,
  ApiRoleList,
  ApiRotation,
  ApiSealReport,
  ApiSelf,
  ApiServerVersion,
  ApiToken,
  ApiTokenList,
  ApiVerification,
  ApiVersionList,
} from '../api/response-schemas.js';
import type {
  LoginOidcCallbackRequest,
  LoginOidcStartRequest,
  LoginRolePutRequest,
  RewrapRequest,
  RolePutRequest,
  TokenCreateRequest,
} from '../api/schemas.js';
import { CofferError } from './errors.js';
import { type JwtLogin, JwtSession } from './jwt-session.js';
import {
  type Answer,
  type Call,
  type RetryPolicy,
  send,
  type TransportOptions,
} from './transport.js';

export type ValueType = ApiEntry['type'];
export type NamespaceValue = ApiNamespaceValues['values'][number];

export interface CofferOptions {
  /** The server, http(s)://host:port; default COFFER_ADDR, else http://127.0.0.1:8750. */
  readonly url?: string;
  /**
   * The token, or a function giving it (called before each call, so a token file that is renewed is read
   * again); default COFFER_TOKEN, else the file COFFER_TOKEN_FILE names.
   */
  readonly token?: string | (() => string | Promise<string>);
  /**
   * No token handed over: log in with the JWT in `jwtFile` under the login role `role`, and again before the
   * token expires or when it is refused (jwt-session.ts); default COFFER_JWT_FILE with COFFER_LOGIN_ROLE.
   */
  readonly jwtLogin?: JwtLogin;
  /** Each attempt's time limit; default 10 s. */
  readonly timeoutMs?: number;
  /** Default: 3 retries, backoff from 100 ms doubling to 5 s, Retry-After waited for up to 30 s. */
  readonly retry?: Partial<RetryPolicy>;
  /** Another fetch (a proxy's dispatcher, say); default the global one. */
  readonly fetch?: typeof fetch;
}

export interface PageOptions {
  readonly limit?: number;
  readonly cursor?: string;
  readonly signal?: AbortSignal;
}

export interface ListOptions extends PageOptions {
  /** Only the keys and child namespaces whose names start with this (case-sensitive). */
  readonly prefix?: string;
}

export interface AuditQuery extends PageOptions {
  readonly from?: string;
  readonly to?: string;
  readonly token_id?: string;
  readonly token_name?: string;
  readonly request_id?: string;
  readonly login_role?: string;
  readonly issuer?: string;
  readonly subject?: string;
  readonly prefix?: string;
  readonly key?: string;
  readonly action?: string;
  readonly outcome?: string;
}

const DEFAULT_ADDR = 'http://127.0.0.1:8750';

/** 1 to 16 segments; each is sent as it is, encoded. */
function namespacePath(namespace: string): string {
  if (namespace === '' || namespace.startsWith('/') || namespace.endsWith('/'))
    throw new TypeError(`"${namespace}" is not a namespace (segments separated by /)`);
  return namespace.split('/').map(encodeURIComponent).join('/');
}

const rolePath = (kind: 'roles' | 'login-roles', name: string): string =>
  `/v1/sys/${kind}/${encodeURIComponent(name)}`;

const keyPath = (namespace: string, key: string): string =>
  `/v1/kv/${namespacePath(namespace)}/${encodeURIComponent(key)}`;

function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

function tokenFromEnv(env: NodeJS.ProcessEnv): () => Promise<string> {
  if (env.COFFER_TOKEN) {
    const token = env.COFFER_TOKEN;
    return async () => token;
  }
  const file = env.COFFER_TOKEN_FILE;
  if (file)
    return async () => {
      const token = (await readFile(file, 'utf8')).trim();
      if (token === '')
        throw new CofferError({ status: 0, code: 'no_token', detail: `${file} is empty` });
      return token;
    };
  return async () => {
    throw new CofferError({
      status: 0,
      code: 'no_token',
      detail: 'no token: set COFFER_TOKEN, or COFFER_TOKEN_FILE to a file holding it',
    });
  };
}

/** The JWT login the options or the environment ask for, if any; one of the two settings alone is an error. */
function jwtLoginOf(options: CofferOptions, env: NodeJS.ProcessEnv): JwtLogin | undefined {
  if (options.jwtLogin) return options.jwtLogin;
  if (options.token !== undefined) return undefined;
  const jwtFile = env.COFFER_JWT_FILE;
  const role = env.COFFER_LOGIN_ROLE;
  if (!jwtFile && !role) return undefined;
  if (!jwtFile || !role)
    throw Object.assign(
      new TypeError(
        `${jwtFile ? 'COFFER_JWT_FILE is set without COFFER_LOGIN_ROLE' : 'COFFER_LOGIN_ROLE is set without COFFER_JWT_FILE'}: a JWT login needs both`,
      ),
      { setting: jwtFile ? 'COFFER_LOGIN_ROLE' : 'COFFER_JWT_FILE' },
    );
  if (env.COFFER_TOKEN || env.COFFER_TOKEN_FILE)
    throw Object.assign(
      new TypeError(
        `${env.COFFER_TOKEN ? 'COFFER_TOKEN' : 'COFFER_TOKEN_FILE'} and COFFER_JWT_FILE are both set: use a token or a JWT login, not both (unset one)`,
      ),
      { setting: 'COFFER_JWT_FILE' },
    );
  return { jwtFile, role };
}

export class Coffer {
  readonly url: string;
  private readonly transport: TransportOptions;
  /** The JWT login session, when the client logs in itself instead of being given a token. */
  readonly session: JwtSession | undefined;

  constructor(options: CofferOptions = {}, env: NodeJS.ProcessEnv = process.env) {
    const url = (options.url ?? env.COFFER_ADDR ?? DEFAULT_ADDR).replace(/\/+$/, '');
    if (!/^https?:\/\/[^/?#]+$/.test(url))
      throw new TypeError(`the address must be http(s)://host:port, not "${url}"`);
    this.url = url;
    const token = options.token;
    const jwtLogin = jwtLoginOf(options, env);
    this.session = jwtLogin
      ? new JwtSession(jwtLogin, (role, jwt) => this.loginWithJwt(role, jwt))
      : undefined;
    const session = this.session;
    this.transport = {
      url,
      token: session
        ? () => session.token()
        : token === undefined
          ? tokenFromEnv(env)
          : typeof token === 'string'
            ? async () => token
            : async () => token(),
      ...(session ? { tokenRefused: (refused: string) => session.refused(refused) } : {}),
      timeoutMs: options.timeoutMs ?? 10_000,
      retry: {
        retries: 3,
        baseDelayMs: 100,
        maxDelayMs: 5_000,
        maxRetryAfterMs: 30_000,
        ...options.retry,
      },
      fetch: options.fetch ?? globalThis.fetch,
      userAgent: 'coffer-client',
    };
  }

  private async call<T>(call: Call): Promise<T> {
    return (await send(this.transport, call)).body as T;
  }

  private answer(call: Call): Promise<Answer> {
    return send(this.transport, call);
  }

  /** A request the server may hold up to `waitSeconds` (its 304 is an answer); undefined once aborted. */
  private async held(
    call: Pick<Call, 'method' | 'path' | 'headers'>,
    waitSeconds: number,
    signal: AbortSignal | undefined,
  ): Promise<Answer | undefined> {
    try {
      return await this.answer({
        ...call,
        accept: [304],
        timeoutMs: waitSeconds * 1000 + this.transport.timeoutMs,
        signal,
      });
    } catch (err) {
      if (signal?.aborted) return undefined;
      throw err;
    }
  }

  // --- key-value ---

  /** The latest version of the key, or `version`. */
  get(
    namespace: string,
    key: string,
    options: { version?: number; signal?: AbortSignal } = {},
  ): Promise<ApiEntry> {
    return this.call({
      method: 'GET',
      path: keyPath(namespace, key) + query({ version: options.version }),
      signal: options.signal,
    });
  }

  /**
   * Stores a new version (a secret unless `type` says config). `ifVersion`: only if the key's latest
   * version is that one (0: only if it does not exist), else a CofferError 412 with `currentVersion`.
   */
  async put(
    namespace: string,
    key: string,
    value: string,
    options: { type?: ValueType; ifVersion?: number; signal?: AbortSignal } = {},
  ): Promise<ApiEntryInfo & { created: boolean }> {
    const answer = await this.answer({
      method: 'PUT',
      path: keyPath(namespace, key) + query({ cas: options.ifVersion }),
      body: { value, type: options.type ?? 'secret' },
      signal: options.signal,
    });
    return { ...(answer.body as ApiEntryInfo), created: answer.status === 201 };
  }

  /** Deletes the key and all its versions; `ifVersion`: only if its latest version is that one. */
  async delete(
    namespace: string,
    key: string,
    options: { ifVersion?: number; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: keyPath(namespace, key) + query({ cas: options.ifVersion }),
      signal: options.signal,
    });
  }

  /** The key's versions, oldest first. */
  versions(
    namespace: string,
    key: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiVersionList> {
    return this.call({
      method: 'GET',
      path: `${keyPath(namespace, key)}/versions`,
      signal: options.signal,
    });
  }

  /**
   * One page of a namespace's keys and child namespaces ('' lists the top-level namespaces); with `prefix`,
   * only those whose names start with it.
   */
  list(namespace: string, options: ListOptions = {}): Promise<ApiListing> {
    const path = namespace === '' ? '/v1/kv/' : `/v1/kv/${namespacePath(namespace)}/`;
    return this.call({
      method: 'GET',
      path: path + query({ limit: options.limit, cursor: options.cursor, prefix: options.prefix }),
      signal: options.signal,
    });
  }

  /** One page of the latest values the caller may read directly in the namespace (one call). */
  valuesPage(namespace: string, options: PageOptions = {}): Promise<ApiNamespaceValues> {
    return this.call({
      method: 'GET',
      path: `/v1/kv/${namespacePath(namespace)}/${query({ values: true, limit: options.limit, cursor: options.cursor })}`,
      signal: options.signal,
    });
  }

  /** Every latest value the caller may read directly in the namespace, following the pages. */
  async values(
    namespace: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<NamespaceValue[]> {
    const all: NamespaceValue[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.valuesPage(namespace, {
        ...(cursor === undefined ? {} : { cursor }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      all.push(...page.values);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    return all;
  }

  /**
   * The key's entry now (when it exists), then each newer version as it is written: one held request at a
   * time (wait_after, up to `waitSeconds`, default 30, each), so a change arrives as soon as it is made. From
   * `after` instead, when given (yielding only versions above it). A deleted key ends it with a CofferError
   * 404; `signal` ends it quietly.
   */
  async *watch(
    namespace: string,
    key: string,
    options: { after?: number; waitSeconds?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<ApiEntry, void, undefined> {
    const wait = options.waitSeconds ?? 30;
    let after = options.after;
    if (after === undefined) {
      try {
        const now = await this.get(namespace, key, {
          ...(options.signal ? { signal: options.signal } : {}),
        });
        yield now;
        after = now.version;
      } catch (err) {
        if (!(err instanceof CofferError && err.status === 404)) throw err;
        after = 0; // wait for it to be created
      }
    }
    while (!options.signal?.aborted) {
      const answer = await this.held(
        {
          method: 'GET',
          path: keyPath(namespace, key) + query({ wait_after: after, timeout: `${wait}s` }),
        },
        wait,
        options.signal,
      );
      if (answer === undefined) return;
      if (answer.status === 304) continue;
      const entry = answer.body as ApiEntry;
      after = entry.version;
      yield entry;
    }
  }

  /**
   * Every value the caller may read directly in the namespace now, then again each time a key there is
   * written, added or deleted (If-None-Match on the first page's ETag, held up to `waitSeconds` each time).
   */
  async *watchValues(
    namespace: string,
    options: { waitSeconds?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<NamespaceValue[], void, undefined> {
    const wait = options.waitSeconds ?? 30;
    let etag: string | undefined;
    while (!options.signal?.aborted) {
      const answer = await this.held(
        {
          method: 'GET',
          path: `/v1/kv/${namespacePath(namespace)}/${query({ values: true, timeout: etag === undefined ? undefined : `${wait}s` })}`,
          ...(etag === undefined ? {} : { headers: { 'if-none-match': etag } }),
        },
        wait,
        options.signal,
      );
      if (answer === undefined) return;
      if (answer.status === 304) continue;
      etag = answer.headers.get('etag') ?? undefined;
      const first = answer.body as ApiNamespaceValues;
      const values = [...first.values];
      let cursor = first.next_cursor ?? undefined;
      while (cursor !== undefined) {
        const page = await this.valuesPage(namespace, {
          cursor,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        values.push(...page.values);
        cursor = page.next_cursor ?? undefined;
      }
      yield values;
    }
  }

  // --- tokens ---

  /**
   * Trades a JWT for a token under a login role (no token needed); the client's own JWT login (`jwtLogin`)
   * calls this for itself.
   */
  loginWithJwt(
    role: string,
    jwt: string,
    options: { tokenRole?: string; signal?: AbortSignal } = {},
  ): Promise<ApiCreatedToken> {
    return this.call({
      method: 'POST',
      path: '/v1/auth/login/jwt',
      body: {
        role,
        jwt,
        ...(options.tokenRole === undefined ? {} : { token_role: options.tokenRole }),
      },
      authenticated: false,
      signal: options.signal,
    });
  }

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
  async keepRenewed(
    options: { signal?: AbortSignal; onRenewed?: (expiresAt: string) => void } = {},
  ): Promise<void> {
    if (this.session) return; // a JWT login session logs in again by itself
    const signal = options.signal;
    let expires = (await this.self(signal ? { signal } : {})).expires_at;
    while (expires !== null && !signal?.aborted) {
      const wait = Math.max(1000, ((Date.parse(expires) - Date.now()) * 2) / 3);
      const woke = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(true), wait);
        signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve(false);
          },
          { once: true },
        );
      });
      if (!woke) return;
      let renewed: ApiToken;
      try {
        renewed = await this.renewSelf(signal ? { signal } : {});
      } catch (err) {
        if (signal?.aborted) return;
        if (err instanceof CofferError && (err.status === 401 || err.status === 400)) return;
        if (Date.parse(expires) <= Date.now()) return;
        continue; // no answer this time: the next third
      }
      if (renewed.expires_at === expires) return; // at its maximum: nothing more to gain
      expires = renewed.expires_at;
      options.onRenewed?.(expires);
    }
  }

  /** Revokes the calling token itself (not the root token); calls with it are refused from then on. */
  async revokeSelf(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.answer({
      method: 'POST',
      path: '/v1/auth/token/revoke-self',
      signal: options.signal,
    });
  }

  // --- roles and login roles (root, or a token with manage_roles) ---

  listRoles(options: { signal?: AbortSignal } = {}): Promise<ApiRoleList> {
    return this.call({ method: 'GET', path: '/v1/sys/roles', signal: options.signal });
  }

  getRole(name: string, options: { signal?: AbortSignal } = {}): Promise<ApiRole> {
    return this.call({ method: 'GET', path: rolePath('roles', name), signal: options.signal });
  }

  /** Creates or replaces a runtime role; effective on every worker and server within a second. */
  putRole(
    name: string,
    role: RolePutRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiRole> {
    return this.call({
      method: 'PUT',
      path: rolePath('roles', name),
      body: role,
      signal: options.signal,
    });
  }

  /** Refused (409) while live tokens or login roles name it, unless `force` (its tokens are refused then). */
  async deleteRole(
    name: string,
    options: { force?: boolean; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: `${rolePath('roles', name)}${query({ force: options.force || undefined })}`,
      signal: options.signal,
    });
  }

  listLoginRoles(options: { signal?: AbortSignal } = {}): Promise<ApiLoginRoleList> {
    return this.call({ method: 'GET', path: '/v1/sys/login-roles', signal: options.signal });
  }

  getLoginRole(name: string, options: { signal?: AbortSignal } = {}): Promise<ApiLoginRole> {
    return this.call({
      method: 'GET',
      path: rolePath('login-roles', name),
      signal: options.signal,
    });
  }

  putLoginRole(
    name: string,
    loginRole: LoginRolePutRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiLoginRole> {
    return this.call({
      method: 'PUT',
      path: rolePath('login-roles', name),
      body: loginRole,
      signal: options.signal,
    });
  }

  async deleteLoginRole(name: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: rolePath('login-roles', name),
      signal: options.signal,
    });
  }

  // --- keyring (root) ---

  keyringStatus(options: { signal?: AbortSignal } = {}): Promise<ApiKeyringStatus> {
    return this.call({ method: 'GET', path: '/v1/sys/keyring', signal: options.signal });
  }

  rotateKeyring(options: { signal?: AbortSignal } = {}): Promise<ApiRotation> {
    return this.call({ method: 'POST', path: '/v1/sys/keyring/rotate', signal: options.signal });
  }

  startRewrap(
    request: RewrapRequest = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiRewrap> {
    return this.call({
      method: 'POST',
      path: '/v1/sys/keyring/rewrap',
      body: request,
      signal: options.signal,
    });
  }

  rewrapStatus(options: { signal?: AbortSignal } = {}): Promise<ApiRewrap> {
    return this.call({ method: 'GET', path: '/v1/sys/keyring/rewrap', signal: options.signal });
  }

  retireKeyringVersions(options: { signal?: AbortSignal } = {}): Promise<ApiRetirement> {
    return this.call({ method: 'POST', path: '/v1/sys/keyring/retire', signal: options.signal });
  }

  /** Rewraps the keyring under another master key: `{ key_provider, ...its settings }`. */
  migrateKeyring(
    request: { key_provider: string; [setting: string]: unknown },
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiMigration> {
    return this.call({
      method: 'POST',
      path: '/v1/sys/keyring/migrate',
      body: request,
      signal: options.signal,
    });
  }

  // --- audit and health ---

  /** One page of audit entries matching the filters. */
  searchAudit(filters: AuditQuery = {}): Promise<ApiAuditPage> {
    const { signal, ...params } = filters;
    return this.call({ method: 'GET', path: `/v1/sys/audit${query({ ...params })}`, signal });
  }

  /** The server verifies the whole audit log (auditor or root). */
  verifyAudit(options: { signal?: AbortSignal } = {}): Promise<ApiVerification> {
    return this.call({ method: 'GET', path: '/v1/sys/audit/verify', signal: options.signal });
  }

  /** The public key the audit checkpoints are signed with (no token needed). */
  auditPublicKey(options: { signal?: AbortSignal } = {}): Promise<ApiAuditPublicKey> {
    return this.call({
      method: 'GET',
      path: '/v1/sys/audit/public-key',
      authenticated: false,
      signal: options.signal,
    });
  }

  sealReport(options: { verify?: boolean; signal?: AbortSignal } = {}): Promise<ApiSealReport> {
    return this.call({
      method: 'GET',
      path: `/v1/sys/seal-report${query({ verify: options.verify })}`,
      signal: options.signal,
    });
  }

  /** The server's release and the commit its build came from (any valid token). */
  serverVersion(options: { signal?: AbortSignal } = {}): Promise<ApiServerVersion> {
    return this.call({ method: 'GET', path: '/v1/sys/version', signal: options.signal });
  }

  /** The server's health (no token needed); a 503 answer is returned, not thrown, with its report. */
  async health(options: { signal?: AbortSignal } = {}): Promise<ApiHealth> {
    const answer = await this.answer({
      method: 'GET',
      path: '/v1/sys/health',
      authenticated: false,
      accept: [503],
      signal: options.signal,
    });
    return (
      answer.status === 503 ? (answer.body as { health: ApiHealth }).health : answer.body
    ) as ApiHealth;
  }

  /** The OpenAPI document the server publishes. */
  openApiDocument(options: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    return this.call({
      method: 'GET',
      path: '/v1/openapi.json',
      authenticated: false,
      signal: options.signal,
    });
  }
}
