/**
 * Talking to an identity provider (its discovery document, its keys, its token endpoint): HTTPS, or plain
 * HTTP to this host's loopback only; every answer bounded in size (`maxBytes`) and time (`timeoutMs`);
 * redirects never followed; the login role's `ca_pem` trusted beside the system's roots.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';

export interface IssuerHttpOptions {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** PEM certificates to trust beside the system's. */
  readonly ca?: string;
}

export interface IssuerAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether `url` is plain HTTP to this host's loopback. */
export function isLoopbackHttp(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' && LOOPBACK.has(parsed.hostname);
  } catch {
    return false;
  }
}

/** Whether an issuer may be reached at `url`: HTTPS, or plain HTTP to loopback; no credentials in it. */
export function isKeyAddress(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.username !== '' || parsed.password !== '') return false;
  return parsed.protocol === 'https:' || isLoopbackHttp(url);
}

/** One request to an issuer, within the bounds. */
export function issuerRequest(
  url: string,
  init: {
    readonly method?: string;
    readonly headers?: Readonly<Record<string, string>>;
    readonly body?: string | Buffer;
    readonly signal?: AbortSignal;
  },
  options: IssuerHttpOptions,
): Promise<IssuerAnswer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    if (!isKeyAddress(url)) {
      reject(new Error(`${target.origin} is not an address an issuer may be reached at`));
      return;
    }
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(
      target,
      {
        method: init.method ?? 'GET',
        headers: init.headers,
        timeout: options.timeoutMs,
        ...(init.signal ? { signal: init.signal } : {}),
        // Node's `ca` replaces the trusted roots: the system's are kept beside the login role's.
        ...(options.ca === undefined ? {} : { ca: [...rootCertificates, options.ca] }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) {
            req.destroy(new Error(`${target.origin} answered more than ${options.maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`${target.origin} did not answer within ${options.timeoutMs} ms`)),
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** GETs `url` and parses its JSON (200 only), within the bounds. */
export async function fetchJson(url: string, options: IssuerHttpOptions): Promise<unknown> {
  const { origin } = new URL(url);
  const answer = await issuerRequest(url, { headers: { accept: 'application/json' } }, options);
  if (answer.status !== 200) throw new Error(`${origin} answered ${answer.status}`);
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    throw new Error(`${origin} did not answer JSON`);
  }
}

/** A fetch for openid-client (its customFetch) that goes through issuerRequest. */
export function issuerFetch(options: IssuerHttpOptions): (
  url: string,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: unknown;
    signal?: AbortSignal;
  },
) => Promise<Response> {
  return async (url, init) => {
    const body =
      init.body === undefined || init.body === null
        ? undefined
        : init.body instanceof URLSearchParams
          ? init.body.toString()
          : typeof init.body === 'string'
            ? init.body
            : undefined;
    if (init.body != null && body === undefined)
      throw new TypeError('an issuer request body must be a string or URLSearchParams');
    const answer = await issuerRequest(
      url,
      {
        method: init.method,
        headers: init.headers,
        ...(body === undefined ? {} : { body }),
        ...(init.signal ? { signal: init.signal } : {}),
      },
      options,
    );
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers))
      if (value !== undefined)
        for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    const nullBody = [101, 204, 205, 304].includes(answer.status);
    return new Response(nullBody ? null : new Uint8Array(answer.body), {
      status: answer.status,
      headers,
    });
  };
}
