/**
 * The client's change events (GET /v1/events, docs/events.md): every change the caller may read, as an
 * async iterator that comes back by itself after a disconnect, a server restart or a 503 — resuming after
 * the last event it yielded (Last-Event-ID), so none is missed and none repeated — and ends quietly on the
 * caller's signal. A position the server no longer keeps fails with `events_expired` (read the state again,
 * then follow from now). The stream's lines (Server-Sent Events) are read here: the client loads nothing
 * but Node.
 */
import { CofferError } from './errors.js';
import { backoff, type RetryPolicy, retryAfterMs } from './transport.js';

/** One change to a key, as the stream sends it: never a value. */
export interface KeyChangeEvent {
  readonly position: number;
  readonly kind: 'kv';
  readonly operation: 'write' | 'delete' | 'undelete' | 'destroy' | 'metadata' | 'versions';
  readonly namespace: string;
  readonly key: string;
  readonly version: number;
  readonly type: 'secret' | 'config';
  readonly versions?: { readonly action: 'delete' | 'undelete' | 'destroy'; readonly of: number[] };
  readonly at: string;
  /** The token id of who made the change. */
  readonly actor: string;
}

/** A token revoked, with the tokens it created (`revoked`: every token the revocation took). */
export interface TokenRevokedEvent {
  readonly position: number;
  readonly kind: 'token';
  readonly operation: 'revoke';
  readonly token_id: string;
  readonly revoked: readonly string[];
  readonly at: string;
  readonly actor: string;
}

/** The keyring rotated: `version` is the new active one. */
export interface KeyringRotatedEvent {
  readonly position: number;
  readonly kind: 'keyring';
  readonly operation: 'rotate';
  readonly version: number;
  readonly at: string;
  readonly actor: string;
}

/** One event: a key's change, or (when `kinds` names them) a revocation or a rotation. */
export type ChangeEvent = KeyChangeEvent | TokenRevokedEvent | KeyringRotatedEvent;

/** What `kinds` may name. */
export type EventKind = KeyChangeEvent['operation'] | 'token.revoke' | 'keyring.rotate';

export interface EventsOptions {
  /** Namespace patterns as scopes write them (`payments/*`, `payments/prod`); default every namespace. */
  readonly namespaces?: readonly string[];
  /**
   * Kinds of event: a key's operations, `token.revoke`, `keyring.rotate`; default every change to a key (a
   * revocation or a rotation only when named).
   */
  readonly kinds?: readonly EventKind[];
  /** Resume after this position; default: from the next change. */
  readonly after?: number;
  readonly signal?: AbortSignal;
  /**
   * Told the position each connection starts after, once the server has opened it (the first, and each
   * after a reconnection): what happens from then on will be yielded.
   */
  readonly onStart?: (position: number) => void;
}

/** Opens the stream after `lastEventId` (none: from the next change). */
export type OpenEvents = (
  lastEventId: number | undefined,
  signal: AbortSignal,
) => Promise<Response>;

/** How long to wait before coming back when the server said nothing (`retry:` says otherwise). */
const DEFAULT_RETRY_MS = 1000;

/** The query of a stream with `options`' filters. */
export function eventsQuery(options: EventsOptions): string {
  const params = new URLSearchParams();
  if (options.namespaces?.length) params.set('namespaces', options.namespaces.join(','));
  if (options.kinds?.length) params.set('kinds', options.kinds.join(','));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** The error a refused stream's answer says (problem+json), or one made of its status. */
async function refusal(res: Response): Promise<CofferError> {
  let body: { code?: unknown; detail?: unknown } = {};
  try {
    body = (await res.json()) as typeof body;
  } catch {
    // not ours: the status says what happened
  }
  return new CofferError({
    status: res.status,
    code: typeof body.code === 'string' ? body.code : `http_${res.status}`,
    detail: typeof body.detail === 'string' ? body.detail : `HTTP ${res.status}`,
    requestId: res.headers.get('x-request-id') ?? undefined,
  });
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });

export async function* followEvents(
  open: OpenEvents,
  options: EventsOptions,
  retry: RetryPolicy,
): AsyncGenerator<ChangeEvent, void, undefined> {
  const controller = new AbortController();
  const signal = options.signal
    ? AbortSignal.any([options.signal, controller.signal])
    : controller.signal;
  let last = options.after;
  let waitMs = DEFAULT_RETRY_MS;
  let failures = 0;
  try {
    while (!signal.aborted) {
      let res: Response;
      try {
        res = await open(last, signal);
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof CofferError && err.status !== 0) throw err; // no token
        await sleep(Math.max(waitMs, backoff(retry, failures++)), signal);
        continue;
      }
      if (res.status === 429 || res.status === 503) {
        await res.body?.cancel();
        await sleep(retryAfterMs(res.headers) ?? backoff(retry, failures++), signal);
        continue;
      }
      if (res.status !== 200 || !res.body) throw await refusal(res);
      failures = 0;
      let started = false;
      try {
        for await (const event of serverSentEvents(res.body, (ms) => (waitMs = ms))) {
          // The stream's first line names where it starts: coming back, it resumes from there.
          if (/^\d{1,16}$/.test(event.id)) last = Number(event.id);
          if (!started && last !== undefined) {
            started = true;
            options.onStart?.(last);
          }
          if (!['kv', 'token', 'keyring'].includes(event.type) || event.data === '') continue;
          yield JSON.parse(event.data) as ChangeEvent;
          if (signal.aborted) return;
        }
      } catch {
        // the connection broke mid-stream: come back after the last event yielded
      }
      if (signal.aborted) return;
      await sleep(waitMs, signal);
    }
  } finally {
    controller.abort();
  }
}

/** One dispatched Server-Sent Event (one with no data only moves the last event id). */
interface ServerSentEvent {
  readonly type: string;
  readonly data: string;
  /** The last event id, as it stands at this dispatch. */
  readonly id: string;
}

/**
 * The events of a text/event-stream body (the HTML standard's parsing rules: lines end in LF, CR or CRLF;
 * `:` starts a comment; `data` lines join with LF; a blank line dispatches); `retry` is handed to `onRetry`.
 */
async function* serverSentEvents(
  body: ReadableStream<Uint8Array>,
  onRetry: (ms: number) => void,
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffered = '';
  let type = '';
  let data: string[] = [];
  let id = '';
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffered.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A CR at the very end may be the first half of a CRLF still to come.
      if (buffered[end] === '\r' && end === buffered.length - 1) break;
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + (buffered.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        yield { type: type || 'message', data: data.join('\n'), id };
        type = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') type = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
    }
  }
}
