/** Coffer.keepRenewed (token-calls.ts): renewing the calling token for as long as a renewal extends it. */
import type { ApiSelf, ApiToken } from '../api/response-schemas.js';
import { CofferError } from './errors.js';

/** The calls a renewal makes. */
export interface Renewer {
  self(options?: { signal?: AbortSignal }): Promise<ApiSelf>;
  renewSelf(options?: { signal?: AbortSignal }): Promise<ApiToken>;
}

/** What Coffer.keepRenewed runs (its documentation says what it does). */
export async function keepRenewed(
  client: Renewer,
  options: { signal?: AbortSignal; onRenewed?: (expiresAt: string) => void } = {},
): Promise<void> {
  const signal = options.signal;
  let expires = (await client.self(signal ? { signal } : {})).expires_at;
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
      renewed = await client.renewSelf(signal ? { signal } : {});
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
