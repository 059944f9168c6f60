/**
 * The console's one way to the API: same-origin fetch with the session cookie (the browser sends it; the
 * page never sees it) and, on every call that changes something, the session's CSRF token. Answers are
 * never cached. A failed call is an ApiError carrying the problem's code, detail and fields.
 */

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

let csrf: string | undefined;

/** The session's CSRF token, sent with every call that changes something; undefined at sign-out. */
export function useCsrf(token: string | undefined): void {
  csrf = token;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf !== undefined) headers['x-coffer-csrf'] = csrf;
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    cache: 'no-store',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status === 204) return undefined as T;
  if (!res.ok) throw await failure(res);
  return (await res.json().catch(() => undefined)) as T;
}

/** A GET whose answer is text (the metrics), not JSON. */
export async function apiText(path: string): Promise<string> {
  const res = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
  if (!res.ok) throw await failure(res);
  return res.text();
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

/** A namespace or key in a path: each segment encoded. */
export const pathOf = (namespace: string, key?: string): string =>
  `/v1/kv/${namespace.split('/').map(encodeURIComponent).join('/')}${key === undefined ? '' : `/${encodeURIComponent(key)}`}`;

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
