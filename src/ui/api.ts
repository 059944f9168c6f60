/**
 * The console's one way to the API: same-origin fetch with the session cookie (the browser sends it; the
 * page never sees it) and, on every call, the session's key (its CSRF token), kept in localStorage, which
 * only this origin (scheme, host and port) reaches: a session cookie that another page of the host planted
 * comes without it and acts as nobody (auth/routes/console-cookie.ts). Answers are
 * never cached. A failed call is an ApiError carrying the problem's code, detail and fields. Each call is a
 * use of the session (lastUseAt; asking whether it lives, currentSession, is not), and a call refused with
 * 401 while signed in tells the page that its session has ended (watchSession).
 */
import type { Session } from './session.js';

export interface FieldError {
  readonly field: string;
  readonly message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly errors: readonly FieldError[] = [],
  ) {
    super(message);
  }
}

const KEY = 'coffer.session-key';

/** The session's key, read at each call: every tab of the console shares it. */
function sessionKey(): string | undefined {
  try {
    return localStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

/** The session's key (its CSRF token), sent with every call; undefined at sign-out. */
export function useCsrf(token: string | undefined): void {
  try {
    if (token === undefined) localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, token);
  } catch {
    // storage refused (a private window's quota): calls go without it, and are refused as signed out
  }
}

/** A new key for a session this page is about to open through an identity provider (32 random bytes). */
export function newSessionKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const key = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
  useCsrf(key);
  return key;
}

let lastUse = Date.now();
let sessionEnded: (() => void) | undefined;

/** When this page last called the API: each call keeps the session from its idle timeout. */
export const lastUseAt = (): number => lastUse;

/** While signed in, `onEnded` hears of a call refused because the session has ended (401); undefined after. */
export function watchSession(onEnded: (() => void) | undefined): void {
  sessionEnded = onEnded;
}

function send(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const key = sessionKey();
  if (key !== undefined) headers['x-coffer-csrf'] = key;
  return fetch(path, {
    method,
    credentials: 'same-origin',
    cache: 'no-store',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A call that uses the session: an answer refused with 401 means it has ended. */
async function use(method: string, path: string, body?: unknown): Promise<Response> {
  lastUse = Date.now();
  const res = await send(method, path, body);
  if (res.status === 401) sessionEnded?.();
  return res;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await use(method, path, body);
  if (res.status === 204) return undefined as T;
  if (!res.ok) throw await failure(res);
  return (await res.json().catch(() => undefined)) as T;
}

/** A GET whose answer is text (the metrics), not JSON. */
export async function apiText(path: string): Promise<string> {
  const res = await use('GET', path);
  if (!res.ok) throw await failure(res);
  return res.text();
}

/** The browser's session, or null when it has none; asking is not a use of it. */
export async function currentSession(): Promise<Session | null> {
  const res = await send('GET', '/v1/console/session');
  if (!res.ok) throw await failure(res);
  const answer = (await res.json()) as Session | { signed_in: false };
  return answer.signed_in ? answer : null;
}

/** A refused call's problem, as an ApiError. */
async function failure(res: Response): Promise<ApiError> {
  const problem = (await res.json().catch(() => undefined)) as
    | { code?: string; detail?: string; errors?: FieldError[] }
    | undefined;
  return new ApiError(
    res.status,
    problem?.code ?? 'error',
    problem?.detail ?? res.statusText,
    problem?.errors ?? [],
  );
}

/**
 * A namespace or key in a path: each segment encoded. A `.` or `..` segment is never put in a path (the
 * browser would resolve it to another endpoint: names never are one, routes.ts checks them first).
 */
export function pathOf(namespace: string, key?: string): string {
  const segments = [...namespace.split('/'), ...(key === undefined ? [] : [key])];
  if (segments.some((s) => s === '.' || s === '..' || s === ''))
    throw new Error('not a namespace or key name');
  return `/v1/kv/${segments.map(encodeURIComponent).join('/')}`;
}

/** What an error says to a person. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) {
    const fields = err.errors
      .filter((e) => e.field !== '')
      .map((e) => `${e.field}: ${e.message}`)
      .join('; ');
    return `${err.message}${fields ? ` (${fields})` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
