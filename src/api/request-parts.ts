/**
 * Reading the parts of a request that Express would otherwise interpret loosely: the raw path (so that
 * percent-encoded tricks are refused, not decoded), the query (duplicates and unknown names refused),
 * and the JSON body (content type required, size bounded, nothing parsed before authorization).
 */
import { isUtf8 } from 'node:buffer';
import express, { type Request, type Response } from 'express';
import { AppError, invalid } from '../errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js';
import { illFormedString, isWellFormed } from './well-formed.js';

/** The request path before any decoding. */
export function rawPath(req: Request): string {
  const url = req.originalUrl;
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

const MAX_NAMED = 10;

/** The query parameters; refuses unknown names, repeated names, and values that are not plain strings. */
export function queryOf<K extends string>(
  req: Request,
  allowed: readonly K[],
): Partial<Record<K, string>> {
  const url = req.originalUrl;
  const q = url.indexOf('?');
  const out: Partial<Record<K, string>> = {};
  if (q < 0) return out;
  const query = url.slice(q + 1);
  refuseMalformedEncoding(query);
  const params = new URLSearchParams(query);
  const unknown: string[] = [];
  for (const [name, value] of params) {
    if (!(allowed as readonly string[]).includes(name)) unknown.push(name);
    else if ((out as Record<string, string>)[name] !== undefined)
      throw invalid(`query parameter "${name}" is repeated`, [
        { field: name, in: 'query', message: 'is repeated' },
      ]);
    else (out as Record<string, string>)[name] = value;
  }
  if (unknown.length > 0) {
    // Named up to ten, so that thousands of parameters cannot make a large answer.
    const named = unknown.slice(0, MAX_NAMED);
    const more =
      unknown.length > MAX_NAMED
        ? ` and ${unknown.length - MAX_NAMED} more (${unknown.length} in all)`
        : '';
    throw invalid(
      `unknown query parameter${unknown.length > 1 ? 's' : ''}: ${named.map((n) => JSON.stringify(n.slice(0, 64))).join(', ')}${more}`,
      named.map((n) => ({ field: n.slice(0, 64), in: 'query', message: 'unknown parameter' })),
    );
  }
  return out;
}

/**
 * URLSearchParams turns a percent-escape that is not UTF-8 (%FF, %ED%A0%80) into U+FFFD without a word, so
 * a filter would silently match something else than what was sent: refuse such a query instead.
 */
function refuseMalformedEncoding(query: string): void {
  for (const pair of query.split('&')) {
    const name = pair.split('=', 1)[0]!;
    try {
      const decoded = decodeURIComponent(pair.replace(/\+/g, ' '));
      if (isWellFormed(decoded)) continue;
    } catch {
      // a malformed escape or bytes that are not UTF-8
    }
    const shown = /^[\w.-]{1,64}$/.test(name) ? name : '(unreadable name)';
    throw invalid(`query parameter ${shown} is not well-formed: percent-escapes must spell UTF-8`, [
      { field: shown, in: 'query', message: 'percent-escapes must spell UTF-8' },
    ]);
  }
}

/** A 400 about query parameter `name`: a bad value, or one given where it does not apply. */
export function queryError(name: string, message: string): AppError {
  return invalid(`${name} ${message}`, [{ field: name, in: 'query', message }]);
}

/**
 * The header `name` (lower case) from the raw list, its values joined with ", " when it was sent more than
 * once, or undefined. For headers read on every request of a hot path: `req.headers` is built on first use,
 * at a cost a read does not otherwise pay.
 */
export function rawHeader(req: Request, name: string): string | undefined {
  const raw = req.rawHeaders;
  let found: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const header = raw[i]!;
    if (header.length === name.length && header.toLowerCase() === name)
      found = found === undefined ? raw[i + 1]! : `${found}, ${raw[i + 1]!}`;
  }
  return found;
}

/** Whether the request announces a body (a Content-Length above 0, or chunked transfer). */
export function hasBody(req: Request): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0
  );
}

/**
 * The charset a Content-Type's parameters name, lower case, without quotes. Checked before the body is read:
 * the nesting check reads bytes as UTF-8, so a body in another charset (UTF-16's brackets are two bytes)
 * would pass it and reach parsing unchecked.
 */
function charsetOf(parameters: readonly string[]): string | undefined {
  for (const parameter of parameters) {
    const [name, value] = parameter.split('=', 2);
    if (name!.trim().toLowerCase() === 'charset')
      return (value ?? '')
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase();
  }
  return undefined;
}

type JsonParser = (req: Request, res: Response, next: (err?: unknown) => void) => void;

/** What the body parser's `verify` step refuses, by the error type it gives (body-parser passes it on). */
const TOO_DEEP = 'entity.too.deep';
const NOT_UTF8 = 'entity.verify.failed';

/**
 * Reads a JSON body of at most `limit` bytes. Call it after authorization, from inside a route. The body
 * must be UTF-8 as sent (no Content-Encoding: a compressed body is refused with 415), its bytes valid UTF-8,
 * nested at most MAX_JSON_DEPTH deep (checked before parsing), and its strings valid Unicode; otherwise it
 * is refused with 400, never stored altered.
 */
export function jsonBodyReader(limit: number): (req: Request, res: Response) => Promise<unknown> {
  const parse: JsonParser = express.json({
    limit,
    strict: true,
    type: () => true,
    inflate: false,
    verify: (_req, _res, bytes) => {
      if (!isUtf8(bytes)) throw new Error('the request body is not valid UTF-8');
      if (nestsDeeperThan(bytes))
        throw Object.assign(new Error('the request body nests too deep'), { type: TOO_DEEP });
    },
  });
  return (req, res) => {
    if (!hasBody(req)) return Promise.reject(invalid('a JSON object body is required'));
    // Vault's clients (its Go client, so its CLI) send JSON without a Content-Type: taken as JSON there.
    const sent =
      req.headers['content-type'] ?? (res.locals.dialect === 'vault' ? 'application/json' : '');
    const [media, ...parameters] = sent.split(';');
    const type = media!.trim().toLowerCase();
    // Vault's PATCH sends its merge patch as such (RFC 7396): JSON all the same.
    const merge = type === 'application/merge-patch+json' && res.locals.dialect === 'vault';
    if (type !== 'application/json' && !merge) {
      return Promise.reject(
        new AppError(
          'unsupported_media_type',
          'the body must be sent with Content-Type: application/json',
        ),
      );
    }
    const charset = charsetOf(parameters);
    if (charset !== undefined && charset !== 'utf-8') {
      return Promise.reject(
        new AppError(
          'unsupported_media_type',
          'the body must be UTF-8: send it with Content-Type: application/json (or charset=utf-8)',
        ),
      );
    }
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity') {
      return Promise.reject(
        new AppError(
          'unsupported_media_type',
          'Coffer does not accept compressed request bodies: send the body without Content-Encoding',
        ),
      );
    }
    return new Promise((resolve, reject) =>
      parse(req, res, (err) => {
        if (err) {
          const type = (err as { type?: unknown }).type;
          return reject(
            type === NOT_UTF8
              ? invalid('the request body is not valid UTF-8')
              : type === TOO_DEEP
                ? invalid(
                    `the request body nests arrays and objects more than ${MAX_JSON_DEPTH} deep`,
                  )
                : err,
          );
        }
        const issue = illFormedString(req.body);
        if (issue) return reject(invalid(`${issue.field || 'body'} ${issue.message}`, [issue]));
        resolve(req.body);
      }),
    );
  };
}
