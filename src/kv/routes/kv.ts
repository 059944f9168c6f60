/**
 * /v1/kv/... routes. Which operation a GET is follows the decided rules:
 *   trailing slash, ?list=true, or a one-segment path  → list the namespace
 *   .../{ns}/{key}/versions                             → the versions of key (a bare `{ns}/versions` is 400)
 *   ?version=n                                          → that version of the key
 *   ?cursor=, ?limit= or ?prefix= without a marker      → list the whole path as a namespace (not …/versions)
 *   anything else                                       → the key if it exists, else the namespace, else 404
 */
import type { Request } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import { booleanFlag, positiveInteger, queryError, rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import {
  entry,
  entryInfo,
  json,
  listing,
  namespaceValues,
  ok,
  oneOfKinds,
  versionList,
} from '../../api/response-schemas.js';
import { kvPutSchema } from '../../api/schemas.js';
import { forbidden, invalid } from '../../errors.js';
import { isNamespace, RESERVED_KEY } from '../../model/names.js';
import type { ValueType } from '../../model/value-types.js';
import { type KvService, VALUES_PAGE_BYTES } from '../kv-service.js';
import { type KvPath, keyUnencoded, namespaceOf, parseKvPath, splitKeyPath } from './kv-path.js';
import { clientGone, conditionOf, heldVersion, ifNoneMatchParam, WAIT_QUERY } from './kv-waits.js';

const MAX_VERSION = 0xffff_ffff;
const MAX_LIMIT = 10_000;
const DEFAULT_LIMIT = 1000;
/** A page of values opens each one: at most this many a call, so that one call cannot hold a worker long. */
const MAX_VALUES_LIMIT = 1000;

export interface KvRouteDeps {
  readonly kv: KvService;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
}

const TEMPLATE = '/v1/kv/{path}';
/** GET here (with or without a trailing slash) lists the top-level namespaces the caller may see. */
const ROOT = '/v1/kv';

const namespaceParam = {
  name: 'namespace',
  in: 'path',
  required: true,
  // Generated clients percent-encode path parameters: a '/' sent as %2F is taken, in the namespace only.
  description:
    "1 to 16 segments separated by /: payments/prod. Sent either as literal '/' characters or, as generated clients send a path parameter, with each '/' encoded as %2F (payments%2Fprod): the same namespace, decoded once. No other escape is taken, and a key never holds %2F (400)",
  schema: { type: 'string' },
};
const keyParam = {
  name: 'key',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' },
};

/** Check-and-set on a PUT or DELETE: the query form of If-Match. */
const CAS_QUERY = {
  cas: {
    schema: { type: 'integer', minimum: 0, maximum: MAX_VERSION },
    description:
      'change only if the latest version is this one (0: only if the key does not exist); 412 otherwise',
  },
};

const ifMatchParam = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    'change only if the latest version is this one: its ETag, "<version>" (a read answers it); 412 otherwise. The same as ?cas=<version>',
  schema: { type: 'string', pattern: '^"[0-9]+"$' },
};

/**
 * The version a change expects (If-Match: "3", or ?cas=3; cas=0: the key must not exist), or undefined.
 * `absentAllowed`: whether "must not exist" makes sense (a PUT; a DELETE of nothing does not).
 */
function expectedVersion(
  req: Request,
  cas: string | undefined,
  absentAllowed: boolean,
): number | undefined {
  const header = req.headers['if-match'];
  let fromHeader: number | undefined;
  if (header !== undefined) {
    const match = /^"(\d{1,10})"$/.exec(header.trim());
    const version = match ? Number(match[1]) : NaN;
    if (!(version >= 1 && version <= MAX_VERSION))
      throw invalid('If-Match must be one version\'s ETag, such as "3"', [
        { field: 'If-Match', in: 'header', message: 'must be "<version>", as a read\'s ETag' },
      ]);
    fromHeader = version;
  }
  const fromQuery =
    cas === undefined ? undefined : cas === '0' ? 0 : positiveInteger('cas', cas, MAX_VERSION);
  if (fromHeader !== undefined && fromQuery !== undefined && fromHeader !== fromQuery)
    throw queryError('cas', 'names another version than If-Match');
  const expected = fromHeader ?? fromQuery;
  if (expected === 0 && !absentAllowed)
    throw invalid(
      'cas=0 (only if the key is absent) does not apply to a delete: give the version you expect to delete',
      [{ field: 'cas', in: 'query', message: '0 does not apply to a delete' }],
    );
  return expected;
}

/** The start of a name (model/names.ts's alphabet). */
const NAME_PREFIX = /^[A-Za-z0-9._-]{1,128}$/;

const READ_QUERY = {
  version: { schema: { type: 'integer', minimum: 1, maximum: MAX_VERSION } },
  limit: { schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } },
  cursor: { schema: { type: 'string' }, description: 'next_cursor from the previous page' },
  list: { schema: { type: 'boolean' }, description: 'list the path as a namespace' },
  details: {
    schema: { type: 'boolean' },
    description:
      "with the listing, each key's latest version, type and time (`details`; no value): what a page of keys shows in one call, where the version list is one call a key",
  },
  prefix: {
    schema: { type: 'string', pattern: NAME_PREFIX.source },
    description:
      'list only the keys and child namespaces whose names start with this (case-sensitive); a cursor belongs to its prefix',
  },
  values: {
    schema: { type: 'boolean' },
    description: `the latest values of the keys directly in the namespace that the caller may read (NamespaceValues), paged by limit (at most ${MAX_VALUES_LIMIT} with values; default ${MAX_VALUES_LIMIT}) and cursor like a listing, and a page ends early once it holds ${VALUES_PAGE_BYTES / 1024 / 1024} MiB of values. Each value read is audited: the call's entry names every key and version it returned. The answer's ETag (the same on every page) changes when a key in the namespace that the caller may read is written, added or deleted: If-None-Match with it answers 304 while it holds, and with timeout waits for a change`,
  },
  ...WAIT_QUERY,
};
type ReadParam = keyof typeof READ_QUERY;

function prefixOf(text: string | undefined): string | undefined {
  if (text === undefined || NAME_PREFIX.test(text)) return text;
  throw queryError('prefix', 'must be 1 to 128 of A-Z, a-z, 0-9, ".", "_" and "-"');
}

/** Each request's kv path, parsed once (the audit entry's target is read from it before the handler). */
const parsedPaths = new WeakMap<Request, KvPath>();
function kvPathOf(req: Request): KvPath {
  let path = parsedPaths.get(req);
  if (path === undefined) {
    path = parseKvPath(rawPath(req));
    parsedPaths.set(req, path);
  }
  return path;
}

/**
 * What a kv path names, for the audit entry of a request refused before its handler: the namespace, and the
 * last segment as the key (a GET of `a/b` may turn out to list namespace `a/b`; a search by prefix finds it
 * either way). A path ending in `/` names a namespace.
 */
function pathTarget(req: Request): { namespace: string; key?: string } {
  const path = kvPathOf(req);
  if (path.trailingSlash || path.segments.length < 2)
    return { namespace: namespaceOf(path.segments) };
  return {
    namespace: namespaceOf(path.segments.slice(0, -1)),
    key: path.segments.at(-1)!,
  };
}

/**
 * Whether a PUT or DELETE can apply to the path: a key needs two segments or more, no trailing slash, and a
 * name other than the version list's. Elsewhere a 405's Allow names GET alone, as the document does.
 */
function mayNameKey(req: Request): boolean {
  const rest = rawPath(req).slice(ROOT.length + 1);
  return rest.includes('/') && !rest.endsWith('/') && !rest.endsWith(`/${RESERVED_KEY}`);
}

function keyTarget(req: Request): { namespace: string; key: string } {
  const path = kvPathOf(req);
  if (path.trailingSlash) throw invalid('a key path must not end with /');
  const target = splitKeyPath(path.segments);
  keyUnencoded(path, path.segments.length - 1);
  if (target.key === RESERVED_KEY) {
    throw invalid(`"${RESERVED_KEY}" is a reserved key name`, [
      {
        field: `/${path.segments.length - 1}`,
        in: 'path',
        message: `"${RESERVED_KEY}" is reserved for the version list`,
      },
    ]);
  }
  return target;
}

export function kvOperations({ kv, respond, recordIntent }: KvRouteDeps): Operation[] {
  const read: Operation<ReadParam> = {
    method: 'GET',
    template: TEMPLATE,
    action: 'read',
    pathTarget,
    query: READ_QUERY,
    docs: [
      {
        operationId: 'listTopNamespaces',
        summary:
          'List the top-level namespaces the caller could list something in (also at /v1/kv/; keys is always empty: a key needs a namespace)',
        path: ROOT,
        query: ['limit', 'cursor', 'prefix'],
        responses: { 200: ok('The top-level namespaces the caller may see', listing) },
      },
      {
        operationId: 'listNamespace',
        summary: 'List a namespace (a one-segment path, a trailing slash, or list=true)',
        path: '/v1/kv/{namespace}',
        query: ['limit', 'cursor', 'prefix', 'list', 'details', 'values', 'timeout'],
        pathParams: [namespaceParam, ifNoneMatchParam],
        responses: {
          200: {
            description:
              'Keys and child namespaces the caller may see (a Listing), or with values=true the values it may read (NamespaceValues)',
            headers: {
              ETag: {
                description: "with values=true: the page's tag (If-None-Match takes it)",
                schema: { type: 'string' },
              },
            },
            ...json(
              oneOfKinds({
                listing: [listing, 'Listing'],
                values: [namespaceValues, 'NamespaceValues'],
              }),
            ),
          },
          304: {
            description:
              'values=true with If-None-Match: the page is unchanged (at the timeout, if one was given)',
            headers: { ETag: { description: "the page's tag", schema: { type: 'string' } } },
          },
        },
        errors: [403, 500],
      },
      {
        operationId: 'readKey',
        summary:
          'Read a key (latest or ?version=n); a path naming no key but a namespace lists it. With wait_after (or If-None-Match and timeout), wait for a newer version',
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam, ifNoneMatchParam],
        query: ['version', 'limit', 'cursor', 'prefix', 'list', 'details', 'wait_after', 'timeout'],
        responses: {
          304: {
            description:
              'If-None-Match or wait_after: the latest version is still the one named (at the timeout, if the read waited)',
            headers: {
              ETag: { description: 'the version named, quoted', schema: { type: 'string' } },
            },
          },
          200: {
            description: 'The entry (with ETag: "<version>"), or a listing',
            headers: {
              ETag: {
                description: 'the entry\'s version, quoted (`"3"`); not sent with a listing',
                schema: { type: 'string' },
              },
            },
            ...json(oneOfKinds({ entry: [entry, 'Entry'], listing: [listing, 'Listing'] })),
          },
        },
        errors: [403, 404, 500],
      },
      {
        operationId: 'listKeyVersions',
        summary: 'List the versions of a key, oldest first',
        path: '/v1/kv/{namespace}/{key}/versions',
        pathParams: [namespaceParam, keyParam],
        query: [],
        responses: {
          200: ok('Versions', versionList),
        },
        errors: [403, 404, 500],
      },
    ],
    async handler(req, res, { query: q }) {
      const caller = principalOf(res);
      const list = booleanFlag('list', q.list);
      const values = booleanFlag('values', q.values);
      const details = booleanFlag('details', q.details);
      const prefix = prefixOf(q.prefix);
      const limit =
        q.limit === undefined ? DEFAULT_LIMIT : positiveInteger('limit', q.limit, MAX_LIMIT);
      const version =
        q.version === undefined ? undefined : positiveInteger('version', q.version, MAX_VERSION);
      const condition = conditionOf(req, q);
      if (condition && version !== undefined)
        throw queryError(
          'version',
          'a version never changes: it does not go with a wait or If-None-Match',
        );
      if (rawPath(req) === ROOT || rawPath(req) === `${ROOT}/`) {
        if (version !== undefined)
          throw queryError('version', 'applies to a key, not to a namespace listing');
        if (values) throw queryError('values', 'a key needs a namespace: name one');
        if (details) throw queryError('details', 'the top level holds namespaces, not keys');
        if (condition)
          throw queryError('timeout', "a wait applies to a key or a namespace's values");
        auditTarget(res, { action: 'list' });
        respond.json(res, 200, await kv.list(caller, '', { limit, cursor: q.cursor, prefix }));
        return;
      }
      const path = kvPathOf(req);
      const { segments, trailingSlash } = path;
      const last = segments[segments.length - 1]!;
      // One segment of the path names a namespace (`payments%2Fprod` too, as a generated client sends it).
      const listingMarked = trailingSlash || list || values || path.rawSegments === 1;
      if (version !== undefined && q.cursor !== undefined)
        throw queryError('cursor', 'applies to a listing, not to reading a version');
      if (version !== undefined && q.limit !== undefined)
        throw queryError('limit', 'applies to a listing, not to reading a version');
      if (version !== undefined && prefix !== undefined)
        throw queryError('prefix', 'applies to a listing, not to reading a version');
      if (version !== undefined && details)
        throw queryError('details', 'applies to a listing, not to reading a version');

      // …/{key}/versions is the version list, which takes no listing parameter (400 below).
      const listingImplied =
        version === undefined &&
        last !== RESERVED_KEY &&
        (q.cursor !== undefined || q.limit !== undefined || prefix !== undefined || details);
      if (listingMarked || listingImplied) {
        if (version !== undefined)
          throw queryError('version', 'applies to a key, not to a namespace listing');
        if (values) {
          if (details)
            throw queryError(
              'details',
              'applies to a listing of names; values=true gives each value',
            );
          if (prefix !== undefined)
            throw queryError(
              'prefix',
              'applies to a listing of names; values=true reads every key of the namespace',
            );
          const namespace = namespaceOf(segments);
          auditTarget(res, { action: 'read', namespace });
          if (condition?.waitAfter)
            throw queryError(
              'wait_after',
              "applies to a key; to wait on a namespace's values, send If-None-Match with their ETag",
            );
          if (limit > MAX_VALUES_LIMIT)
            throw queryError('limit', `with values=true must be from 1 to ${MAX_VALUES_LIMIT}`);
          const pageOf = { limit, cursor: q.cursor };
          const answer =
            condition?.waitMs === undefined
              ? await kv.values(caller, namespace, pageOf)
              : await kv.valuesAfter(caller, namespace, pageOf, condition.held, {
                  deadline: Date.now() + condition.waitMs,
                  signal: clientGone(res),
                  holder: { token: caller.id, address: String(res.locals.client ?? '') },
                });
          if (answer === 'unchanged' || answer.tag === condition?.held) {
            auditTarget(res, { reads: [] });
            respond.empty(res, 304, [['ETag', `"${condition!.held}"`]]);
            return;
          }
          // One entry for the call names every key and version it returned.
          auditTarget(res, {
            reads: answer.page.values.map((v) => ({ key: v.key, version: v.version })),
          });
          respond.json(res, 200, answer.page, [['ETag', `"${answer.tag}"`]]);
          return;
        }
        if (condition)
          throw queryError('timeout', "a wait applies to a key or a namespace's values");
        auditTarget(res, { action: 'list', namespace: namespaceOf(segments) });
        respond.json(
          res,
          200,
          await kv.list(caller, namespaceOf(segments), {
            limit,
            cursor: q.cursor,
            prefix,
            details,
          }),
        );
        return;
      }
      if (last === RESERVED_KEY) {
        if (segments.length === 2) {
          throw invalid(
            `"${RESERVED_KEY}" is a reserved key name; to list the namespace ${segments.join('/')}, end the path with /`,
            [
              {
                field: '/1',
                in: 'path',
                message: `"${RESERVED_KEY}" is reserved for the version list`,
              },
            ],
          );
        }
        if (version !== undefined) throw queryError('version', 'does not apply to a version list');
        const listingParam = (
          [
            ['cursor', q.cursor !== undefined],
            ['limit', q.limit !== undefined],
            ['prefix', prefix !== undefined],
            ['details', details],
            ['list', list],
          ] as const
        ).find(([, given]) => given)?.[0];
        if (listingParam) throw queryError(listingParam, 'does not apply to a version list');
        const { namespace, key } = splitKeyPath(segments.slice(0, -1));
        keyUnencoded(path, segments.length - 2);
        auditTarget(res, { action: 'versions', namespace, key });
        respond.json(res, 200, await kv.versions(caller, namespace, key));
        return;
      }
      const { namespace, key } = splitKeyPath(segments);
      keyUnencoded(path, segments.length - 1);
      auditTarget(res, { namespace, key, ...(version === undefined ? {} : { version }) });
      if (condition) {
        const held = heldVersion(condition);
        const entry =
          condition.waitMs === undefined
            ? await kv.read(caller, namespace, key)
            : await kv.readAfter(caller, namespace, key, held, {
                deadline: Date.now() + condition.waitMs,
                signal: clientGone(res),
                holder: { token: caller.id, address: String(res.locals.client ?? '') },
              });
        if (entry === 'unchanged' || entry.version === held) {
          auditTarget(res, { version: held });
          respond.empty(res, 304, [['ETag', `"${held}"`]]);
          return;
        }
        auditTarget(res, { version: entry.version });
        respond.json(res, 200, entry, [['ETag', `"${entry.version}"`]]);
        return;
      }
      const whole = segments.join('/');
      const result =
        version !== undefined
          ? await kv.read(caller, namespace, key, version)
          : await kv.readOrList(caller, namespace, key, isNamespace(whole) ? whole : null, limit);
      auditTarget(
        res,
        'value' in result ? { version: result.version } : { action: 'list', namespace: whole },
      );
      respond.json(
        res,
        200,
        result,
        'value' in result ? [['ETag', `"${result.version}"`]] : undefined,
      );
    },
  };

  const write: Operation<'cas', { value: string; type: ValueType }> = {
    method: 'PUT',
    template: TEMPLATE,
    action: 'write',
    pathTarget,
    serves: mayNameKey,
    query: CAS_QUERY,
    body: { schema: kvPutSchema, required: true },
    docs: [
      {
        operationId: 'writeKey',
        summary:
          'Store a new version; 201 when the key is created, 200 when a version is added; with If-Match or cas, only over the version named (412 otherwise)',
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam, ifMatchParam],
        responses: { 200: ok('Version added', entryInfo), 201: ok('Key created', entryInfo) },
        errors: [403, 412],
      },
    ],
    async handler(req, res, input) {
      const caller = principalOf(res);
      const { namespace, key } = keyTarget(req);
      const ifVersion = expectedVersion(req, input.query.cas, true);
      auditTarget(res, { namespace, key });
      // Authorize what can be known before the body is read: a forbidden caller's body is never parsed.
      if (!caller.access.mayInNamespace('write', namespace))
        throw forbidden(`write in ${namespace}`);
      const body = await input.body();
      const { created, ...info } = await kv.put(
        caller,
        namespace,
        key,
        body.value,
        body.type,
        () => recordIntent(res, { action: 'write', namespace, key }),
        ifVersion,
      );
      auditTarget(res, { version: info.version });
      respond.json(res, created ? 201 : 200, info);
    },
  };

  const remove: Operation<'cas'> = {
    method: 'DELETE',
    template: TEMPLATE,
    action: 'delete',
    pathTarget,
    serves: mayNameKey,
    query: CAS_QUERY,
    docs: [
      {
        operationId: 'deleteKey',
        summary:
          'Delete the key and all its versions (numbers are never reused); with If-Match or cas, only if the latest version is the one named (412 otherwise)',
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam, ifMatchParam],
        responses: { 204: { description: 'Deleted' } },
        errors: [403, 404, 412],
      },
    ],
    async handler(req, res, { query }) {
      const { namespace, key } = keyTarget(req);
      const ifVersion = expectedVersion(req, query.cas, false);
      auditTarget(res, { namespace, key });
      await kv.remove(
        principalOf(res),
        namespace,
        key,
        () => recordIntent(res, { action: 'delete', namespace, key }),
        ifVersion,
      );
      respond.empty(res, 204);
    },
  };

  return [read, write, remove] as Operation[];
}
