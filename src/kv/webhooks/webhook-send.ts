/**
 * One webhook message, sent once: a JSON body `{type, timestamp, data}` POSTed with the Standard Webhooks
 * headers — `webhook-id` (the same for every attempt at one message, so a receiver drops a repeat),
 * `webhook-timestamp` (this attempt's, in seconds) and `webhook-signature` (`v1,` + base64 of
 * HMAC-SHA256 over `id.timestamp.body` under the webhook's secret: the standardwebhooks package signs).
 * A 2xx answer is delivery; anything else, a redirect included, is not. The connection goes only to an
 * address the destination check allows (destination.ts). Nothing here logs the secret or the body.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { guardedLookup, literalRefused, PrivateDestinationError } from './destination.js';

/**
 * How long one attempt may take in all — connection, TLS, the answer's headers and its body together —
 * however the receiver paces its bytes (a socket's idle timeout would let one byte every few seconds hold
 * an attempt for ever).
 */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** The most of a receiver's answer read (then dropped). */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface WebhookMessage {
  /** Stable across attempts: the receiver's way to drop a repeat. */
  readonly id: string;
  /** `kv.write`, `kv.delete`, …, or `webhook.test`. */
  readonly type: string;
  readonly data: object;
}

export interface Attempt {
  readonly delivered: boolean;
  /** The receiver's status, when it answered. */
  readonly status?: number;
  /** Why it failed, in words a log may hold (never the URL, the secret or the body). */
  readonly error?: string;
  readonly ms: number;
}

/** Sends `message` to `url` once, signed with `secret`. */
export function sendMessage(
  url: URL,
  secret: string,
  message: WebhookMessage,
  options: {
    readonly allowPrivate: boolean;
    readonly userAgent: string;
    /** Ends the attempt at once (the delivery stops). */
    readonly signal?: AbortSignal;
  },
): Promise<Attempt> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  if (literalRefused(url, options.allowPrivate))
    return Promise.resolve({
      delivered: false,
      error: new PrivateDestinationError().message,
      ms: 0,
    });
  const now = new Date();
  const body = JSON.stringify({
    type: message.type,
    timestamp: now.toISOString(),
    data: message.data,
  });
  const signature = new Webhook(secret).sign(message.id, now, body);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const done = (attempt: Omit<Attempt, 'ms'>): void => {
      if (settled) return;
      settled = true;
      resolve({ ...attempt, ms: ms() });
    };
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': options.userAgent,
          'webhook-id': message.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signature,
        },
        lookup: guardedLookup(options.allowPrivate) as never,
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) res.destroy();
        });
        const answered = () =>
          done(
            status >= 200 && status < 300
              ? { delivered: true, status }
              : { delivered: false, status, error: `the receiver answered ${status}` },
          );
        res.on('end', answered);
        res.on('close', answered);
        res.on('error', answered);
      },
    );
    const timer = setTimeout(() => {
      done({ delivered: false, error: `no whole answer within ${ATTEMPT_TIMEOUT_MS / 1000} s` });
      req.destroy(new Error('timed out'));
    }, ATTEMPT_TIMEOUT_MS);
    const stop = () => {
      done({ delivered: false, error: 'ended before its answer: the delivery stopped' });
      req.destroy(new Error('stopped'));
    };
    options.signal?.addEventListener('abort', stop, { once: true });
    if (options.signal?.aborted) stop();
    req.on('close', () => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', stop);
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      done({
        delivered: false,
        error:
          err instanceof PrivateDestinationError
            ? err.message
            : err.code
              ? `could not reach the receiver (${err.code})`
              : 'could not reach the receiver',
      }),
    );
    req.end(body);
  });
}
