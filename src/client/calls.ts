/**
 * What every call of the client goes through: the address, the token (given, from the environment, or a JWT
 * login the client does itself: jwt-session.ts) and the transport (transport.ts: timeouts, retries, errors).
 * The calls themselves are by area: kv-calls.ts, token-calls.ts, coffer.ts.
 */
import type { ApiCreatedToken } from '../api/response-schemas.js';
import { JwtSession } from './jwt-session.js';
import { type CofferOptions, DEFAULT_ADDR, jwtLoginOf, tokenFromEnv } from './options.js';
import { type Answer, type Call, send, type TransportOptions } from './transport.js';

export class Calls {
  readonly url: string;
  protected readonly transport: TransportOptions;
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

  protected async call<T>(call: Call): Promise<T> {
    return (await send(this.transport, call)).body as T;
  }

  protected answer(call: Call): Promise<Answer> {
    return send(this.transport, call);
  }

  /** A request the server may hold up to `waitSeconds` (its 304 is an answer); undefined once aborted. */
  protected async held(
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
}
