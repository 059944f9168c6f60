/**
 * PUT and DELETE of a key under /v1/kv/..., each optionally conditional on its latest version (If-Match,
 * ?cas=); DELETE moves the key to the trash (`?destroy=true` erases it for good, live or deleted), and
 * POST `?undelete=true` brings a deleted key back. With `?versions=1,3`, DELETE deletes (or destroys) and
 * POST undeletes those versions one by one (kv/deletions.ts).
 */
import { Type } from '@sinclair/typebox';
import type { Request, Response } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import { flag, integer, parsed } from '../../api/query-params.js';
import { queryError, rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { entryInfo, keyMetadata, ok, versionsChange } from '../../api/response-schemas.js';
import { type KvMetadataRequest, kvMetadataSchema, kvPutSchema } from '../../api/schemas.js';
import { forbidden, invalid } from '../../errors.js';
import { RESERVED_KEY } from '../../model/names.js';
import type { ValueType } from '../../model/value-types.js';
import type { VersionsChange } from '../entries.js';
import type { KvService } from '../kv-service.js';
import {
  keyParam,
  keyUnencoded,
  kvPathOf,
  MAX_VERSION,
  namespaceParam,
  pathTarget,
  ROOT,
  splitKeyPath,
  TEMPLATE,
} from './kv-path.js';

/** Check-and-set on a PUT or DELETE: the query form of If-Match. */
const CAS_QUERY = {
  cas: integer({
    minimum: 0,
    maximum: MAX_VERSION,
    description:
      'change only if the latest version is this one (0: only if the key does not exist); 412 otherwise',
  }),
};

/** Versions acted on one by one: `1,3,4`, at most 1,000. */
const VERSIONS = parsed({
  pattern: '^[1-9][0-9]{0,9}(,[1-9][0-9]{0,9}){0,999}$',
  parse: (text) => text.split(',').map(Number),
  description:
    'versions to act on one by one, comma-separated (at most 1,000): naming the latest acts on the key itself; versions the key does not keep are left as they are. Answered 200 with what changed',
  invalid: 'a comma-separated list of version numbers, at most 1,000',
});

const DELETE_QUERY = {
  ...CAS_QUERY,
  versions: VERSIONS,
  destroy: flag({
    description:
      'true: erase the key for good, live or deleted: every version, and its place in the trash (cas=0: only a deleted key)',
  }),
};

const UNDELETE_QUERY = {
  undelete: flag({ description: 'true (required): take the deleted key out of the trash' }),
  versions: VERSIONS,
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
  cas: number | undefined,
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
  const fromQuery = cas;
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

export function kvWriteOperations({
  kv,
  respond,
  recordIntent,
}: {
  kv: KvService;
  respond: Responder;
  recordIntent: RecordIntent;
}): Operation[] {
  /** `?versions=`: those versions deleted, undeleted or destroyed one by one, audited with what changed. */
  const actOnVersions = async (
    res: Response,
    action: VersionsChange['action'],
    namespace: string,
    key: string,
    versions: readonly number[],
  ): Promise<void> => {
    res.locals.action = action;
    const change = await kv.deletions.versions(
      principalOf(res),
      namespace,
      key,
      action,
      versions,
      () => recordIntent(res, { action, namespace, key }),
    );
    auditTarget(res, { versions: change.versions });
    respond.json(res, 200, change);
  };

  const write: Operation<typeof CAS_QUERY, { value: string; type: ValueType }> = {
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
          'Store a new version; 201 when the key is created, 200 when a version is added; with If-Match or cas, only over the version named (412 otherwise). A key whose metadata sets cas_required refuses a write without them (428)',
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam, ifMatchParam],
        responses: { 200: ok('Version added', entryInfo), 201: ok('Key created', entryInfo) },
        errors: [403, 412, 428],
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
      const { created, pruned, ...info } = await kv.put(
        caller,
        namespace,
        key,
        body.value,
        body.type,
        () => recordIntent(res, { action: 'write', namespace, key }),
        ifVersion,
      );
      auditTarget(res, { version: info.version, ...(pruned.length > 0 ? { pruned } : {}) });
      respond.json(res, created ? 201 : 200, info);
    },
  };

  const remove: Operation<typeof DELETE_QUERY> = {
    method: 'DELETE',
    template: TEMPLATE,
    action: 'delete',
    pathTarget,
    serves: mayNameKey,
    query: DELETE_QUERY,
    docs: [
      {
        operationId: 'deleteKey',
        summary:
          'Delete the key: it reads and lists as absent (404), its versions stay in the trash, readable by number, until it is destroyed; undelete brings it back, a write takes them on. With ?destroy=true, erase it for good, live or deleted (numbers are never reused). With If-Match or cas, only if the latest version is the one named (412 otherwise). With ?versions=, delete (or destroy) those versions one by one, live key or deleted: a deleted version is 404 until undeleted, a destroyed one is gone; naming the latest deletes the key too',
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam, ifMatchParam],
        responses: {
          200: ok('With ?versions=: what changed', versionsChange),
          204: { description: 'Deleted (or destroyed)' },
        },
        errors: [400, 403, 404, 412],
      },
    ],
    async handler(req, res, { query }) {
      const { namespace, key } = keyTarget(req);
      const destroy = query.destroy === true;
      const ifVersion = expectedVersion(req, query.cas, destroy);
      auditTarget(res, { namespace, key });
      if (query.versions !== undefined) {
        if (ifVersion !== undefined)
          throw queryError('versions', 'names versions itself: not with If-Match or cas');
        return actOnVersions(res, destroy ? 'destroy' : 'delete', namespace, key, query.versions);
      }
      if (destroy) {
        res.locals.action = 'destroy';
        await kv.deletions.destroy(
          principalOf(res),
          namespace,
          key,
          () => recordIntent(res, { action: 'destroy', namespace, key }),
          ifVersion,
        );
      } else {
        await kv.deletions.remove(
          principalOf(res),
          namespace,
          key,
          () => recordIntent(res, { action: 'delete', namespace, key }),
          ifVersion,
        );
      }
      respond.empty(res, 204);
    },
  };

  const undelete: Operation<typeof UNDELETE_QUERY> = {
    method: 'POST',
    template: TEMPLATE,
    action: 'undelete',
    pathTarget,
    serves: mayNameKey,
    query: UNDELETE_QUERY,
    strayBody:
      'POST on a key undeletes it (?undelete=true) and takes no body; a value is written with PUT',
    docs: [
      {
        operationId: 'undeleteKey',
        summary:
          'With ?undelete=true: take a deleted key out of the trash, as it was when deleted (its versions, its latest); 404 when it is not in the trash, 409 when its latest version is destroyed. With ?versions= as well, undelete those versions one by one (naming the latest of a deleted key restores the key)',
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam],
        responses: {
          200: ok(
            'Restored: its latest version (with ?versions=: what changed)',
            Type.Union([entryInfo, versionsChange]),
          ),
        },
        errors: [400, 403, 404, 409],
      },
    ],
    async handler(req, res, { query }) {
      const { namespace, key } = keyTarget(req);
      if (query.undelete !== true)
        throw queryError('undelete', 'POST on a key takes ?undelete=true (PUT writes a value)');
      auditTarget(res, { namespace, key });
      if (query.versions !== undefined)
        return actOnVersions(res, 'undelete', namespace, key, query.versions);
      const info = await kv.deletions.undelete(principalOf(res), namespace, key, () =>
        recordIntent(res, { action: 'undelete', namespace, key }),
      );
      auditTarget(res, { version: info.version });
      respond.json(res, 200, info);
    },
  };

  const setMetadata: Operation<Record<string, never>, KvMetadataRequest> = {
    method: 'PATCH',
    template: TEMPLATE,
    action: 'metadata',
    pathTarget,
    serves: mayNameKey,
    body: { schema: kvMetadataSchema, required: true },
    docs: [
      {
        operationId: 'setKeyMetadata',
        summary:
          "Set a key's own metadata (custom_metadata: its map, replaced), the most versions it keeps (max_versions; 0: no limit; the next write destroys the oldest beyond it, named in that write's audit entry), whether every write must name the version it replaces (cas_required) and how many seconds after it is written each new version is deleted (delete_version_after; 0: never), not its value",
        path: '/v1/kv/{namespace}/{key}',
        pathParams: [namespaceParam, keyParam],
        responses: { 200: ok("The key's metadata now", keyMetadata) },
        errors: [400, 403, 404],
      },
    ],
    async handler(req, res, input) {
      const caller = principalOf(res);
      const { namespace, key } = keyTarget(req);
      auditTarget(res, { namespace, key });
      if (!caller.access.mayInNamespace('write', namespace))
        throw forbidden(`write in ${namespace}`);
      const body = await input.body();
      respond.json(
        res,
        200,
        await kv.setMetadata(caller, namespace, key, body, () =>
          recordIntent(res, { action: 'metadata', namespace, key }),
        ),
      );
    },
  };

  return [write, remove, undelete, setMetadata] as Operation[];
}
