/**
 * Searching the audit log (GET /v1/sys/audit): every chain's files are read line by line, entries that
 * match the filters are kept, and one page is returned in (time, chain, seq) order, which is a total
 * order over all chains. The cursor names the last entry of the page, so a page continues exactly after
 * it even while the log grows. Checkpoint lines are not entries and are never returned; `coffer audit
 * verify` is what checks them. Cost: one pass over the log per page (see docs/audit.md).
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { AuditFilterQuery } from '../model/audit-filters.js';
import { ROLE_NAME } from '../model/policies.js';
import type { StoredChains } from './database-copy.js';
import { auditFilesIn, type ChainFile, chainFiles } from './files.js';

export interface AuditFilter {
  /** ISO times: from inclusive, to exclusive. */
  readonly from?: string;
  readonly to?: string;
  /** The caller's token id, the token acted on, or who ran an operator event (`by`). */
  readonly tokenId?: string;
  /** The caller's token name (its metadata name), exactly. */
  readonly tokenName?: string;
  /** One request's entries (its X-Request-Id). */
  readonly requestId?: string;
  /** A JWT login's login role, issuer and verified subject, exactly (in its entry and its token.create event). */
  readonly loginRole?: string;
  readonly issuer?: string;
  readonly subject?: string;
  /** Matches `namespace/key` (or the namespace of a listing) by string prefix. */
  readonly prefix?: string;
  /** Matches `namespace/key` exactly: one key, not the keys that start like it. */
  readonly key?: string;
  /** An action or event name; `keyring.*` matches every name that starts with `keyring.`. */
  readonly action?: string;
  /** `success` (status below 400), `failure`, a status such as `403`, or an error code such as `forbidden`. */
  readonly outcome?: string;
}

const OUTCOME = /^(success|failure|[1-5][0-9][0-9]|[a-z_]{1,64})$/;
const ACTION = /^[a-z][a-z._]{0,63}\*?$/;

/** The search's filters as the API names them (GET /v1/sys/audit, coffer audit search): model/audit-filters.ts. */
export type AuditQuery = AuditFilterQuery;

/** The filter `q` asks for; `bad` refuses a malformed one, naming its parameter. */
export function auditFilterOf(
  q: AuditQuery,
  bad: (name: string, message: string) => never,
): AuditFilter {
  const filter: { -readonly [K in keyof AuditFilter]: AuditFilter[K] } = {};
  const time = (name: string, text: string | undefined): string | undefined =>
    text === undefined
      ? undefined
      : (auditTime(text) ?? bad(name, 'must be an ISO 8601 time such as 2026-11-22T10:00:00Z'));
  const from = time('from', q.from);
  const to = time('to', q.to);
  if (from !== undefined) filter.from = from;
  if (to !== undefined) filter.to = to;
  if (from !== undefined && to !== undefined && from >= to) bad('to', 'must be later than from');
  if (q.token_id !== undefined) {
    if (!/^[A-Za-z0-9]{1,64}$/.test(q.token_id))
      bad('token_id', 'must be a token id (never a token)');
    filter.tokenId = q.token_id;
  }
  if (q.token_name !== undefined) {
    if (q.token_name === '' || q.token_name.length > 128)
      bad('token_name', 'must be 1 to 128 characters, as a token name');
    filter.tokenName = q.token_name;
  }
  if (q.request_id !== undefined) {
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(q.request_id))
      bad('request_id', 'must be a request id, as X-Request-Id gives it');
    filter.requestId = q.request_id;
  }
  if (q.login_role !== undefined) {
    if (!ROLE_NAME.test(q.login_role)) bad('login_role', 'must be a login role name');
    filter.loginRole = q.login_role;
  }
  if (q.issuer !== undefined) {
    if (q.issuer === '' || q.issuer.length > 1024) bad('issuer', 'must be 1 to 1024 characters');
    filter.issuer = q.issuer;
  }
  if (q.subject !== undefined) {
    if (q.subject === '' || q.subject.length > 1024) bad('subject', 'must be 1 to 1024 characters');
    filter.subject = q.subject;
  }
  if (q.prefix !== undefined) {
    if (q.prefix === '' || q.prefix.length > 1024) bad('prefix', 'must be 1 to 1024 characters');
    filter.prefix = q.prefix;
  }
  if (q.key !== undefined) {
    if (!q.key.includes('/') || q.key.length > 4096)
      bad('key', 'must be namespace/key, e.g. payments/prod/db_password');
    filter.key = q.key;
  }
  if (q.action !== undefined) {
    if (!ACTION.test(q.action))
      bad(
        'action',
        'must be an action or event name such as read or keyring.rotate, optionally ending in *',
      );
    filter.action = q.action;
  }
  if (q.outcome !== undefined) {
    if (!OUTCOME.test(q.outcome))
      bad(
        'outcome',
        'must be success, failure, a status such as 403, or an error code such as forbidden',
      );
    // `error` is said for a failure too (no error code is named so).
    filter.outcome = q.outcome === 'error' ? 'failure' : q.outcome;
  }
  return filter;
}

export interface AuditPosition {
  readonly ts: string;
  readonly chain: string;
  readonly seq: number;
}

export type AuditEntry = Readonly<Record<string, unknown>> & AuditPosition;

export interface AuditPage {
  readonly entries: AuditEntry[];
  readonly next: AuditPosition | null;
}

/**
 * An ISO 8601 date or time (2026-11-22, 2026-11-22T10:00:00Z, …) as the log writes times (UTC, milliseconds),
 * so that times compare as strings; undefined when `text` is not one.
 */
export function auditTime(text: string): string | undefined {
  const ms = /^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(text)
    ? Date.parse(text)
    : NaN;
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

function compare(a: AuditPosition, b: AuditPosition): number {
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1;
  if (a.chain !== b.chain) return a.chain < b.chain ? -1 : 1;
  return a.seq - b.seq;
}

function outcomeMatches(entry: Record<string, unknown>, wanted: string): boolean {
  const outcome = entry.outcome as { status?: unknown; code?: unknown } | undefined;
  if (!outcome || typeof outcome.status !== 'number') return false;
  if (wanted === 'success') return outcome.status < 400;
  if (wanted === 'failure') return outcome.status >= 400;
  if (/^[1-5][0-9][0-9]$/.test(wanted)) return outcome.status === Number(wanted);
  return outcome.code === wanted;
}

/**
 * What an entry acted on, as `namespace/key` paths: its key, each key a namespace's values read returned
 * (`reads`), or, with neither, its namespace (a listing's entry).
 */
function pathsOf(entry: Record<string, unknown>): string[] {
  const { namespace, key, reads } = entry;
  if (typeof namespace !== 'string') return [];
  if (typeof key === 'string') return [`${namespace}/${key}`];
  if (Array.isArray(reads)) {
    const paths = reads.flatMap((r: { key?: unknown }) =>
      typeof r?.key === 'string' ? [`${namespace}/${r.key}`] : [],
    );
    // The namespace itself too: a prefix that names it finds the call even when it returned nothing.
    return [namespace, ...paths];
  }
  return [namespace];
}

function matches(entry: Record<string, unknown>, filter: AuditFilter): boolean {
  const ts = entry.ts as string;
  if (filter.from !== undefined && ts < filter.from) return false;
  if (filter.to !== undefined && ts >= filter.to) return false;
  if (
    filter.tokenId !== undefined &&
    ![entry.token_id, entry.subject_token_id, entry.by].includes(filter.tokenId)
  )
    return false;
  if (filter.tokenName !== undefined && entry.token_name !== filter.tokenName) return false;
  if (filter.requestId !== undefined && entry.request_id !== filter.requestId) return false;
  if (filter.loginRole !== undefined && entry.login_role !== filter.loginRole) return false;
  if (filter.issuer !== undefined && entry.issuer !== filter.issuer) return false;
  if (filter.subject !== undefined && entry.subject !== filter.subject) return false;
  if (filter.prefix !== undefined || filter.key !== undefined) {
    const paths = pathsOf(entry);
    if (filter.prefix !== undefined && !paths.some((p) => p.startsWith(filter.prefix!)))
      return false;
    if (filter.key !== undefined && !paths.includes(filter.key)) return false;
  }
  if (filter.action !== undefined) {
    const name = entry.kind === 'event' ? entry.event : entry.action;
    if (typeof name !== 'string') return false;
    if (
      filter.action.endsWith('*')
        ? !name.startsWith(filter.action.slice(0, -1))
        : name !== filter.action
    )
      return false;
  }
  if (filter.outcome !== undefined && !outcomeMatches(entry, filter.outcome)) return false;
  return true;
}

/** A file's lines: streamed from disk, or split from the store's copy. */
function linesOf(file: ChainFile): AsyncIterable<string> | Iterable<string> {
  if (file.text !== undefined) return file.text.split('\n');
  return createInterface({
    input: createReadStream(file.path, { encoding: 'utf8' }),
    crlfDelay: Infinity,
  });
}

/**
 * One page of the entries that match `filter`, after `after`, at most `limit`: of the chains in `dir`, and
 * with `stored` (shared storage) of every other chain the store keeps.
 */
export async function queryAudit(
  dir: string,
  filter: AuditFilter,
  limit: number,
  after: AuditPosition | null,
  stored?: StoredChains,
  newestFirst = false,
): Promise<AuditPage> {
  const order = newestFirst ? (a: AuditPosition, b: AuditPosition) => compare(b, a) : compare;
  // The best `limit + 1` so far, in order: one more than a page tells whether another page follows.
  const kept: AuditEntry[] = [];
  const keep = (entry: AuditEntry): void => {
    if (kept.length > limit && order(entry, kept[limit]!) >= 0) return;
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (order(kept[mid]!, entry) < 0) lo = mid + 1;
      else hi = mid;
    }
    kept.splice(lo, 0, entry);
    if (kept.length > limit + 1) kept.pop();
  };

  for (const files of chainFiles(auditFilesIn(dir), stored?.files).values()) {
    for (const file of files) {
      for await (const line of linesOf(file)) {
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue; // a line being written by another process right now
        }
        if (
          entry.kind === 'checkpoint' ||
          entry.kind === 'intent' ||
          typeof entry.ts !== 'string' ||
          typeof entry.chain !== 'string' ||
          typeof entry.seq !== 'number'
        )
          continue;
        const position = entry as AuditEntry;
        if (after !== null && order(position, after) <= 0) continue;
        if (matches(entry, filter)) keep(position);
      }
    }
  }
  const page = kept.slice(0, limit);
  return {
    entries: page,
    next:
      kept.length > limit
        ? { ts: page.at(-1)!.ts, chain: page.at(-1)!.chain, seq: page.at(-1)!.seq }
        : null,
  };
}

/** A cursor: the position of a page's last entry, and (for newest first) the order it belongs to. */
export function encodeAuditCursor(position: AuditPosition, newestFirst = false): string {
  const fields = [position.ts, position.chain, position.seq, ...(newestFirst ? ['newest'] : [])];
  return Buffer.from(JSON.stringify(fields)).toString('base64url');
}

/**
 * The position named by a cursor, with the order it belongs to, or undefined when it is not one of ours.
 */
export function decodeAuditCursor(
  cursor: string,
): (AuditPosition & { readonly newestFirst: boolean }) | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      !Array.isArray(value) ||
      (value.length !== 3 && !(value.length === 4 && value[3] === 'newest'))
    )
      return undefined;
    const [ts, chain, seq] = value as unknown[];
    if (
      typeof ts !== 'string' ||
      typeof chain !== 'string' ||
      !Number.isSafeInteger(seq) ||
      (seq as number) < 1
    )
      return undefined;
    if (Number.isNaN(Date.parse(ts)) || !/^[A-Za-z0-9-]{1,100}$/.test(chain)) return undefined;
    return { ts, chain, seq: seq as number, newestFirst: value.length === 4 };
  } catch {
    return undefined;
  }
}
