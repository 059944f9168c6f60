/**
 * The four GET operations of /v1/kv/...: which one a GET is follows the decided rules:
 *   trailing slash, ?list=true, or a one-segment path  → list the namespace
 *   .../{ns}/{key}/versions                             → the versions of key (a bare `{ns}/versions` is 400)
 *   ?version=n                                          → that version of the key
 *   ?cursor=, ?limit= or ?prefix= without a marker      → list the whole path as a namespace (not …/versions)
 *   anything else                                       → the key if it exists, else the namespace, else 404
 */
import type { Request } from 'express';
import { auditTarget, namespaceTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { Operation, OperationDoc } from '../../api/operation.js';
import { flag, integer, type QueryValues, text } from '../../api/query-params.js';
import { queryError, rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import {
  entry,
  json,
  listing,
  namespaceValues,
  ok,
  oneOfKinds,
  trashListing,
  versionList,
} from '../../api/response-schemas.js';
import { invalid } from '../../errors.js';
import { isNamespace, RESERVED_KEY } from '../../model/names.js';
import { type KvService, VALUES_PAGE_BYTES } from '../kv-service.js';
import {
  keyParam,
  keyUnencoded,
  kvPathOf,
  MAX_VERSION,
  namespaceOf,
  namespaceParam,
  pathTarget,
  ROOT,
  splitKeyPath,
  TEMPLATE,
} from './kv-path.js';
import { clientGone, conditionOf, heldVersion, ifNoneMatchParam, WAIT_QUERY } from './kv-waits.js';

const MAX_LIMIT = 10_000;
const DEFAULT_LIMIT = 1000;
/** A page of values opens each one: at most this many a call, so that one call cannot hold a worker long. */
const MAX_VALUES_LIMIT = 1000;

/** The start of a name (model/names.ts's alphabet). */
const NAME_PREFIX = /^[A-Za-z0-9._-]{1,128}$/;

const READ_QUERY = {
  version: integer({ minimum: 1, maximum: MAX_VERSION }),
  limit: integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }),
  cursor: text({ description: 'next_cursor from the previous page' }),
  list: flag({ description: 'list the path as a namespace' }),
  details: flag({
    description:
      "with the listing, each key's latest version, type and time (`details`; no value): what a page of keys shows in one call, where the version list is one call a key",
  }),
  prefix: text({
    pattern: NAME_PREFIX.source,
    invalid: 'must be 1 to 128 of A-Z, a-z, 0-9, ".", "_" and "-"',
    description:
      'list only the keys and child namespaces whose names start with this (case-sensitive); a cursor belongs to its prefix',
  }),
  values: flag({
    description: `the latest values of the keys directly in the namespace that the caller may read (NamespaceValues), paged by limit (at most ${MAX_VALUES_LIMIT} with values; default ${MAX_VALUES_LIMIT}) and cursor like a listing, and a page ends early once it holds ${VALUES_PAGE_BYTES / 1024 / 1024} MiB of values. Each value read is audited: the call's entry names every key and version it returned. The answer's ETag (the same on every page) changes when a key in the namespace that the caller may read is written, added or deleted: If-None-Match with it answers 304 while it holds, and with timeout waits for a change`,
  }),
  trash: flag({
    description:
      'the keys deleted directly in the namespace (its trash) whose type the caller may list, with their latest version and when they were deleted (TrashListing; no value), paged by limit and cursor',
  }),
  ...WAIT_QUERY,
};

/** Which of the four GET operations a kv path and its query are (the rules at the top of this file). */
function classify(req: Request, q: QueryValues<typeof READ_QUERY>): string {
  const { version } = q;
  const condition = conditionOf(req, q);
  if (condition && version !== undefined)
    throw queryError(
      'version',
      'a version never changes: it does not go with a wait or If-None-Match',
    );
  if (rawPath(req) === ROOT || rawPath(req) === `${ROOT}/`) {
    if (version !== undefined)
      throw queryError('version', 'applies to a key, not to a namespace listing');
    if (q.values === true) throw queryError('values', 'a key needs a namespace: name one');
    if (q.trash === true) throw queryError('trash', 'a deleted key is in a namespace: name one');
    if (q.details === true) throw queryError('details', 'the top level holds namespaces, not keys');
    if (condition) throw queryError('timeout', "a wait applies to a key or a namespace's values");
    return 'listTopNamespaces';
  }
  const path = kvPathOf(req);
  const last = path.segments[path.segments.length - 1]!;
  // One segment of the path names a namespace (`payments%2Fprod` too, as a generated client sends it).
  const listingMarked =
    path.trailingSlash ||
    q.list === true ||
    q.values === true ||
    q.trash === true ||
    path.rawSegments === 1;
  if (version !== undefined) {
    for (const name of ['cursor', 'limit', 'prefix'] as const)
      if (q[name] !== undefined)
        throw queryError(name, 'applies to a listing, not to reading a version');
    if (q.details === true)
      throw queryError('details', 'applies to a listing, not to reading a version');
  }
  // …/{key}/versions is the version list, which takes no listing parameter (400 there).
  const listingImplied =
    version === undefined &&
    last !== RESERVED_KEY &&
    (q.cursor !== undefined ||
      q.limit !== undefined ||
      q.prefix !== undefined ||
      q.details === true);
  if (listingMarked || listingImplied) {
    if (version !== undefined)
      throw queryError('version', 'applies to a key, not to a namespace listing');
    return 'listNamespace';
  }
  return last === RESERVED_KEY ? 'listKeyVersions' : 'readKey';
}

export function kvReadOperations({
  kv,
  respond,
}: {
  kv: KvService;
  respond: Responder;
}): Operation[] {
  /** A GET of a kv path is one of four operations, told apart before any runs (classify). */
  const form = (
    docs: OperationDoc,
    handler: Operation<typeof READ_QUERY>['handler'],
  ): Operation<typeof READ_QUERY> => ({
    method: 'GET',
    template: TEMPLATE,
    action: 'read',
    pathTarget,
    query: READ_QUERY,
    classify,
    docs: [docs],
    handler,
  });

  const listTop = form(
    {
      operationId: 'listTopNamespaces',
      summary:
        'List the top-level namespaces the caller could list something in (also at /v1/kv/; keys is always empty: a key needs a namespace)',
      path: ROOT,
      query: ['limit', 'cursor', 'prefix'],
      responses: { 200: ok('The top-level namespaces the caller may see', listing) },
    },
    async (_req, res, { query: q }) => {
      auditTarget(res, { action: 'list' });
      respond.json(
        res,
        200,
        await kv.list(principalOf(res), '', {
          limit: q.limit ?? DEFAULT_LIMIT,
          cursor: q.cursor,
          prefix: q.prefix,
        }),
      );
    },
  );

  const listNamespace = form(
    {
      operationId: 'listNamespace',
      summary: 'List a namespace (a one-segment path, a trailing slash, or list=true)',
      path: '/v1/kv/{namespace}',
      query: ['limit', 'cursor', 'prefix', 'list', 'details', 'values', 'trash', 'timeout'],
      pathParams: [namespaceParam, ifNoneMatchParam],
      responses: {
        200: {
          description:
            'Keys and child namespaces the caller may see (a Listing), with values=true the values it may read (NamespaceValues), or with trash=true its deleted keys (TrashListing)',
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
              trash: [trashListing, 'TrashListing'],
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
    async (req, res, { query: q }) => {
      const caller = principalOf(res);
      const { segments } = kvPathOf(req);
      const { prefix } = q;
      const details = q.details === true;
      const limit = q.limit ?? DEFAULT_LIMIT;
      const condition = conditionOf(req, q);
      if (q.trash === true) {
        const stray = q.values ? 'values' : details ? 'details' : prefix ? 'prefix' : null;
        if (stray ?? condition) throw queryError(stray ?? 'timeout', 'does not go with trash=true');
        const namespace = namespaceOf(segments);
        auditTarget(res, namespaceTarget('list', namespace));
        respond.json(
          res,
          200,
          await kv.deletions.list(caller, namespace, { limit, cursor: q.cursor }),
        );
        return;
      }
      if (q.values === true) {
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
        auditTarget(res, namespaceTarget('read', namespace));
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
      if (condition) throw queryError('timeout', "a wait applies to a key or a namespace's values");
      auditTarget(res, namespaceTarget('list', namespaceOf(segments)));
      respond.json(
        res,
        200,
        await kv.list(caller, namespaceOf(segments), { limit, cursor: q.cursor, prefix, details }),
      );
    },
  );

  const readKey = form(
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
    async (req, res, { query: q }) => {
      const caller = principalOf(res);
      const path = kvPathOf(req);
      const { segments } = path;
      const { version } = q;
      const condition = conditionOf(req, q);
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
      const limit = q.limit ?? DEFAULT_LIMIT;
      const result =
        version !== undefined
          ? await kv.read(caller, namespace, key, version)
          : await kv.readOrList(caller, namespace, key, isNamespace(whole) ? whole : null, limit);
      auditTarget(
        res,
        'value' in result ? { version: result.version } : namespaceTarget('list', whole),
      );
      respond.json(
        res,
        200,
        result,
        'value' in result ? [['ETag', `"${result.version}"`]] : undefined,
      );
    },
  );

  const listVersions = form(
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
    async (req, res, { query: q }) => {
      const path = kvPathOf(req);
      const { segments } = path;
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
      if (q.version !== undefined) throw queryError('version', 'does not apply to a version list');
      const listingParam = (
        [
          ['cursor', q.cursor !== undefined],
          ['limit', q.limit !== undefined],
          ['prefix', q.prefix !== undefined],
          ['details', q.details === true],
          ['list', q.list === true],
        ] as const
      ).find(([, given]) => given)?.[0];
      if (listingParam) throw queryError(listingParam, 'does not apply to a version list');
      const { namespace, key } = splitKeyPath(segments.slice(0, -1));
      keyUnencoded(path, segments.length - 2);
      auditTarget(res, { action: 'versions', namespace, key });
      respond.json(res, 200, await kv.versions(principalOf(res), namespace, key));
    },
  );

  return [listTop, listNamespace, readKey, listVersions] as Operation[];
}
