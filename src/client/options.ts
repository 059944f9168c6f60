/** What a client is made from: its options, the environment's settings, and the page and filter options of its calls. */
import type { ApiEntry, ApiNamespaceValues } from '../api/response-schemas.js';
import type { AuditFilterQuery } from '../model/audit-filters.js';
import { readCredential } from './credential-file.js';
import { CofferError } from './errors.js';
import type { JwtLogin } from './jwt-session.js';
import type { RetryPolicy } from './transport.js';

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

/** The audit search's filters (model/audit-filters.ts, where each is declared once) and a page. */
export interface AuditQuery extends PageOptions, AuditFilterQuery {}

export const DEFAULT_ADDR = 'http://127.0.0.1:8750';

export function tokenFromEnv(env: NodeJS.ProcessEnv): () => Promise<string> {
  if (env.COFFER_TOKEN) {
    const token = env.COFFER_TOKEN;
    return async () => token;
  }
  const file = env.COFFER_TOKEN_FILE;
  if (file) return () => readCredential(file, 'the token file (COFFER_TOKEN_FILE)');
  return async () => {
    throw new CofferError({
      status: 0,
      code: 'no_token',
      detail: 'no token: set COFFER_TOKEN, or COFFER_TOKEN_FILE to a file holding it',
    });
  };
}

/** The JWT login the options or the environment ask for, if any; one of the two settings alone is an error. */
export function jwtLoginOf(options: CofferOptions, env: NodeJS.ProcessEnv): JwtLogin | undefined {
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
