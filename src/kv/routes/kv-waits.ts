/**
 * Reading when something changed, for the kv routes: `wait_after=N` on a key (answer once its version is
 * above N), `If-None-Match` on a key's latest read (its ETag, "<version>") or on a namespace's values (the
 * ETag of that page), each answered at once, or — with `timeout` — held until a change or the timeout, when
 * it is 304. kv/key-changes.ts holds the waits.
 */
import type { Request, Response } from 'express';
import { integer, parsed, type QueryValues } from '../../api/query-params.js';
import { queryError, rawHeader } from '../../api/request-parts.js';
import { invalid } from '../../errors.js';
import { MAX_VERSION } from './kv-path.js';

/** How long a wait is held unless `timeout` says otherwise, and at most. */
export const DEFAULT_WAIT_MS = 30_000;
export const MAX_WAIT_MS = 300_000;

export const WAIT_QUERY = {
  wait_after: integer({
    minimum: 0,
    maximum: MAX_VERSION,
    invalid: 'must be a version number (0: wait for the key to exist)',
    description:
      "answer once the key's latest version is above this one: at once if it is, else when a write makes it so, or 304 at the timeout (0: wait for the key to exist; 404 if it is deleted meanwhile)",
  }),
  timeout: parsed({
    pattern: '^[0-9]{1,6}(ms|s|m)?$',
    parse: milliseconds,
    invalid: 'must be a duration such as 250ms, 30s or 2m',
    description: `how long a wait (wait_after, or If-None-Match) is held before 304: 250ms, 30s, 2m or a number of seconds; default ${DEFAULT_WAIT_MS / 1000}s, at most ${MAX_WAIT_MS / 1000}s`,
  }),
};

export const ifNoneMatchParam = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description:
    'the ETag the caller holds: 304 when it is still current (at once, or with timeout when nothing changed until then), else the answer with its new ETag',
  schema: { type: 'string', pattern: '^"[A-Za-z0-9_-]{1,32}"$' },
};

/** What a read is conditional on: the version or page tag the caller holds, and how long it may wait. */
export interface Condition {
  /** The key's version (wait_after, or its If-None-Match), or the values page's tag. */
  readonly held: string;
  /** undefined: answer at once (If-None-Match without timeout). */
  readonly waitMs: number | undefined;
  readonly waitAfter: boolean;
}

/** A timeout's text, which its pattern has passed, in milliseconds. */
function milliseconds(text: string): number {
  const match = /^([0-9]{1,6})(ms|s|m)?$/.exec(text)!;
  const ms = Number(match[1]) * ({ ms: 1, s: 1000, m: 60_000 }[match[2] ?? 's'] ?? 1000);
  if (ms < 1 || ms > MAX_WAIT_MS)
    throw queryError('timeout', `must be from 1ms to ${MAX_WAIT_MS / 1000}s`);
  return ms;
}

/** The request's condition, or undefined when it has none. */
export function conditionOf(
  req: Request,
  query: QueryValues<typeof WAIT_QUERY>,
): Condition | undefined {
  const header = rawHeader(req, 'if-none-match');
  let tag: string | undefined;
  if (header !== undefined) {
    const match = /^"([A-Za-z0-9_-]{1,32})"$/.exec(header.trim());
    if (!match)
      throw invalid('If-None-Match must be one ETag this server gave, such as "3"', [
        {
          field: 'If-None-Match',
          in: 'header',
          message: 'must be one quoted ETag; W/, * and lists are not taken',
        },
      ]);
    tag = match[1];
  }
  let after: string | undefined;
  if (query.wait_after !== undefined) {
    after = String(query.wait_after);
    if (tag !== undefined && tag !== after)
      throw queryError('wait_after', 'names another version than If-None-Match');
  }
  const waitMs = query.timeout;
  const held = after ?? tag;
  if (held === undefined) {
    if (waitMs !== undefined)
      throw queryError('timeout', 'applies to a wait: give wait_after or If-None-Match');
    return undefined;
  }
  return {
    held,
    waitMs: waitMs ?? (after !== undefined ? DEFAULT_WAIT_MS : undefined),
    waitAfter: after !== undefined,
  };
}

/** The version a key's condition holds (its ETag must be a version). */
export function heldVersion(condition: Condition): number {
  if (!/^[0-9]{1,10}$/.test(condition.held) || Number(condition.held) > MAX_VERSION)
    throw invalid('If-None-Match on a key must be its ETag, the version: "3"', [
      { field: 'If-None-Match', in: 'header', message: 'must be "<version>"' },
    ]);
  return Number(condition.held);
}

/** An AbortSignal that fires when the response closes (the client went away), so its wait ends with it. */
export function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  return controller.signal;
}
