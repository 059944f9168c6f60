/**
 * /v1/kv/... routes. Which operation a GET is follows the decided rules:
 *   trailing slash, ?list=true, or a one-segment path  → list the namespace
 *   .../{ns}/{key}/versions                             → the versions of key (a bare `{ns}/versions` is 400)
 *   ?version=n                                          → that version of the key
 *   ?cursor= or ?limit= without a marker                → list the whole path as a namespace
 *   anything else                                       → the key if it exists, else the namespace, else 404
 */
import type { Request, Response } from 'express';
import { forbidden, invalid } from '../../errors.js';
import type { KvService } from '../../kv/kv-service.js';
import { isNamespace, RESERVED_KEY } from '../../model/names.js';
import type { ValueType } from '../../model/value-types.js';
import { auditTarget } from '../audit-target.js';
import { principalOf } from '../authenticate.js';
import { namespaceOf, parseKvPath, splitKeyPath } from '../kv-path.js';
import type { RecordIntent } from '../request-audit.js';
import { booleanFlag, positiveInteger, queryError, queryOf, rawPath } from '../request-parts.js';
import type { Responder } from '../respond.js';
import type { BodyValidator } from '../validate.js';

const MAX_VERSION = 0xffff_ffff;
const MAX_LIMIT = 10_000;
const DEFAULT_LIMIT = 1000;

export interface KvRouteDeps {
  readonly kv: KvService;
  readonly readBody: (req: Request, res: Response) => Promise<unknown>;
  readonly validatePut: BodyValidator<{ value: string; type: ValueType }>;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
}

function keyTarget(req: Request): { namespace: string; key: string } {
  const path = parseKvPath(rawPath(req));
  if (path.trailingSlash) throw invalid('a key path must not end with /');
  const target = splitKeyPath(path.segments);
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

export function kvRoutes({ kv, readBody, validatePut, respond, recordIntent }: KvRouteDeps) {
  return {
    async get(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      const { segments, trailingSlash } = parseKvPath(rawPath(req));
      const q = queryOf(req, ['version', 'list', 'limit', 'cursor']);
      const list = booleanFlag('list', q.list);
      const limit =
        q.limit === undefined ? DEFAULT_LIMIT : positiveInteger('limit', q.limit, MAX_LIMIT);
      const version =
        q.version === undefined ? undefined : positiveInteger('version', q.version, MAX_VERSION);
      const last = segments[segments.length - 1]!;
      const listingMarked = trailingSlash || list || segments.length === 1;
      if (version !== undefined && q.cursor !== undefined)
        throw queryError('cursor', 'applies to a listing, not to reading a version');
      if (version !== undefined && q.limit !== undefined)
        throw queryError('limit', 'applies to a listing, not to reading a version');

      if (
        listingMarked ||
        (version === undefined && (q.cursor !== undefined || q.limit !== undefined))
      ) {
        if (version !== undefined)
          throw queryError('version', 'applies to a key, not to a namespace listing');
        auditTarget(res, { action: 'list', namespace: namespaceOf(segments) });
        respond.json(
          res,
          200,
          await kv.list(caller, namespaceOf(segments), { limit, cursor: q.cursor }),
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
        if (list || q.cursor !== undefined || q.limit !== undefined)
          throw queryError(
            q.cursor !== undefined ? 'cursor' : q.limit !== undefined ? 'limit' : 'list',
            'does not apply to a version list',
          );
        const { namespace, key } = splitKeyPath(segments.slice(0, -1));
        auditTarget(res, { action: 'versions', namespace, key });
        respond.json(res, 200, await kv.versions(caller, namespace, key));
        return;
      }
      const { namespace, key } = splitKeyPath(segments);
      auditTarget(res, { namespace, key, ...(version === undefined ? {} : { version }) });
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

    async put(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      const { namespace, key } = keyTarget(req);
      auditTarget(res, { namespace, key });
      queryOf(req, []);
      // Authorize what can be known before the body is read: a forbidden caller's body is never parsed.
      if (!caller.access.mayInNamespace('write', namespace))
        throw forbidden(`write in ${namespace}`);
      const body = validatePut(await readBody(req, res));
      const { created, ...info } = await kv.put(caller, namespace, key, body.value, body.type, () =>
        recordIntent(res, { action: 'write', namespace, key }),
      );
      auditTarget(res, { version: info.version });
      respond.json(res, created ? 201 : 200, info);
    },

    async remove(req: Request, res: Response): Promise<void> {
      const { namespace, key } = keyTarget(req);
      auditTarget(res, { namespace, key });
      queryOf(req, []);
      await kv.remove(principalOf(res), namespace, key, () =>
        recordIntent(res, { action: 'delete', namespace, key }),
      );
      respond.empty(res, 204);
    },
  };
}
