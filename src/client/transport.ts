/**
 * One call to the server over Node's own fetch: the bearer token, a timeout per attempt, and retries with
 * exponential backoff and full jitter (the delay drawn from the CSPRNG) on what is safe to repeat:
 *
 * - a read (GET) after a network error, a timeout, a 503 or a 429;
 * - any call whose connection was never made (refused, no route, name not found): nothing was sent;
 * - any call answered 429: the server refuses it before reading it.
 *
 * A write whose connection broke after it was sent, that timed out, or that was answered 503 (the audit log
 * or the storage could not confirm it) is never repeated: it may have been applied, and repeating it would
 * add a second version. It fails with `mayHaveApplied` set, for the caller to check (a read, or the write
 * again with check-and-set). Retry-After is honoured, up to `maxRetryAfterMs`.
 */
import { CofferError } from './errors.js';

export interface RetryPolicy {
  /** Attempts after the first; 0: never retry. */
  readonly retries: number;
  /** The first backoff's ceiling; each next one doubles, up to maxDelayMs. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the call fails with the server's answer. */
  readonly maxRetryAfterMs: number;
}

export interface TransportOptions {
  readonly url: string;
  readonly token: () => Promise<string>;
  /**
   * The server refused `token` (401): true when another token is on hand to send the call once more with
   * (a JWT login session logs in again); absent for a fixed token.
   */
  readonly tokenRefused?: (token: string) => boolean;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly fetch: typeof fetch;
  readonly userAgent: string;
}

export interface Call {
  readonly method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
  /** Already encoded, from /v1/... */
  readonly path: string;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Statuses at or above 400 that are answers here, not errors (none by default). */
  readonly accept?: readonly number[];
  /** This attempt's time limit, when not the client's (a wait holds its request longer). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal | undefined;
  /** False: send no token (the public endpoints). */
  readonly authenticated?: boolean;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** The parsed JSON body; undefined when there is none. */
  readonly body: unknown;
}

/** Connection errors that mean the request never left: safe to send again whatever it is. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const sleep = (ms: number, signal: AbortSignal | undefined): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** A uniform draw in [0, 1) from the CSPRNG. */
function uniform(): number {
  return globalThis.crypto.getRandomValues(new Uint32Array(1))[0]! / 2 ** 32;
}

/** Full jitter: anywhere from 0 to the attempt's ceiling. */
export function backoff(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.floor(uniform() * ceiling);
}

/** Retry-After in milliseconds (seconds or an HTTP date), or undefined. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const text = headers.get('retry-after');
  if (text === null) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * What a failed TLS handshake means, by its code; undefined for any other failure. Nothing was sent (the
 * handshake comes before the request), and sending again would fail the same way.
 */
function tlsFailure(code: string | undefined): string | undefined {
  if (code === undefined) return undefined;
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG')
    return 'it does not answer TLS (is the address http://?)';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'its certificate does not name this host';
  if (code === 'CERT_HAS_EXPIRED') return 'its certificate has expired';
  if (/SELF_SIGNED|UNABLE_TO_(VERIFY|GET_ISSUER)|CERT_UNTRUSTED/.test(code))
    return 'its certificate is not trusted here (a private CA: NODE_EXTRA_CA_CERTS names its file)';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'the TLS handshake failed';
  return undefined;
}

function errorCode(err: unknown): string | undefined {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

function problemOf(answer: Answer, method: string): CofferError {
  const body = (answer.body ?? {}) as {
    code?: unknown;
    detail?: unknown;
    title?: unknown;
    errors?: unknown;
    current_version?: unknown;
  };
  const code = typeof body.code === 'string' ? body.code : `http_${answer.status}`;
  const detail =
    typeof body.detail === 'string'
      ? body.detail
      : typeof body.title === 'string'
        ? body.title
        : `HTTP ${answer.status}`;
  return new CofferError({
    status: answer.status,
    code,
    detail,
    requestId: answer.headers.get('x-request-id') ?? undefined,
    errors: Array.isArray(body.errors)
      ? (body.errors as { field: string; message: string }[])
      : undefined,
    currentVersion: typeof body.current_version === 'number' ? body.current_version : undefined,
    // A 503 to a write: the audit log or the storage could not confirm it, and it may be applied.
    mayHaveApplied: answer.status === 503 && method !== 'GET',
  });
}

async function attempt(
  options: TransportOptions,
  call: Call,
  token: string | undefined,
): Promise<Answer> {
  const headers: Record<string, string> = {
    accept: 'application/json',
    'user-agent': options.userAgent,
    ...call.headers,
  };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  const timeout = AbortSignal.timeout(call.timeoutMs ?? options.timeoutMs);
  const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
  const res = await options.fetch(options.url + call.path, {
    method: call.method,
    headers,
    signal,
    ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
  });
  const text = await res.text();
  let body: unknown;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined; // not ours (a proxy's page): the status says what happened
    }
  }
  return { status: res.status, headers: res.headers, body };
}

/** Sends `call`, retrying what is safe to retry; resolves with a 2xx, a 304 or an accepted status. */
export async function send(options: TransportOptions, call: Call): Promise<Answer> {
  const idempotent = call.method === 'GET';
  let sentAgainForRefusal = false;
  for (let tries = 0; ; tries++) {
    const more = tries < options.retry.retries;
    let answer: Answer;
    let token: string | undefined;
    try {
      // Whitespace around it, as a header's value is taken (a file's or a variable's last line break).
      token = call.authenticated === false ? undefined : (await options.token()).trim();
      // A header cannot carry it (fetch would refuse it after a fashion that reads like a lost connection).
      if (token !== undefined && !/^[\x21-\x7e]+$/.test(token))
        throw new CofferError({
          status: 0,
          code: 'no_token',
          detail:
            'the token holds a space, a control or a non-ASCII character: no token does (check COFFER_TOKEN or its file)',
        });
      answer = await attempt(options, call, token);
    } catch (err) {
      if (call.signal?.aborted) throw call.signal.reason;
      if (err instanceof CofferError) throw err; // no token: nothing was sent
      const code = errorCode(err);
      const tls = tlsFailure(code);
      if (tls !== undefined)
        throw new CofferError({
          status: 0,
          code: 'unreachable',
          detail: `cannot talk to ${options.url} over TLS: ${tls} (${code})`,
          cause: err,
        });
      const timedOut = (err as { name?: string }).name === 'TimeoutError';
      const notSent = code !== undefined && NOT_SENT.has(code);
      if (more && (idempotent || notSent)) {
        await sleep(backoff(options.retry, tries), call.signal);
        continue;
      }
      throw new CofferError({
        status: 0,
        code: timedOut ? 'timeout' : notSent ? 'unreachable' : 'connection_lost',
        detail: timedOut
          ? `no answer from ${options.url} within ${call.timeoutMs ?? options.timeoutMs} ms`
          : notSent
            ? `cannot reach ${options.url} (${code})`
            : `the connection to ${options.url} was lost (${code ?? (err as Error).message})`,
        mayHaveApplied: !idempotent && !notSent,
        cause: err,
      });
    }
    if (answer.status < 400 || call.accept?.includes(answer.status)) return answer;
    // A refused token acknowledges nothing (the server refuses before doing anything): once more with a new one.
    if (
      answer.status === 401 &&
      token !== undefined &&
      !sentAgainForRefusal &&
      options.tokenRefused?.(token)
    ) {
      sentAgainForRefusal = true;
      tries--;
      continue;
    }
    const retryable = answer.status === 429 || (answer.status === 503 && idempotent);
    if (more && retryable) {
      const after = retryAfterMs(answer.headers);
      if (after === undefined || after <= options.retry.maxRetryAfterMs) {
        await sleep(Math.max(after ?? 0, backoff(options.retry, tries)), call.signal);
        continue;
      }
    }
    throw problemOf(answer, call.method);
  }
}
