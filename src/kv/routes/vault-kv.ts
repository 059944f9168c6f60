/**
 * KV version 2 in Vault's dialect (api/vault-dialect.ts), for each mount COFFER_VAULT_MOUNTS declares:
 * `GET {mount}/data/{path}` reads a secret (`?version=N`), `PUT|POST {mount}/data/{path}` writes one
 * (`options.cas`), `PATCH` merges fields into it, `DELETE` deletes it (Coffer's trash: its latest version
 * reads as deleted, every version is kept) and `{mount}/delete|undelete|destroy/{path}` act on versions as
 * far as Coffer acts on a key (those in vault-deletes.ts), `GET {mount}/subkeys/{path}` names its fields
 * without their values, `GET {mount}/metadata/{path}` reads its versions (with `?list=true` lists a
 * folder) and `DELETE` there destroys every version.
 * A Vault secret is one Coffer key whose value is the secret's JSON object; the same privileges, types,
 * audit entries (actions `vault.*`, naming the Coffer namespace and key) and limits as the native API.
 */
import type { Request, Response } from 'express';
import { type AuditTarget, auditTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import { flag, integer } from '../../api/query-params.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import {
  VAULT_ROOT,
  type VaultMount,
  vaultAnswer,
  vaultKeyOf,
  vaultNamespaceOf,
} from '../../api/vault-dialect.js';
import { AppError, forbidden, invalid } from '../../errors.js';
import type { KvService } from '../kv-service.js';
import { MAX_VERSION } from './kv-path.js';
import { vaultDeleteOperations } from './vault-deletes.js';
import { goDuration } from './vault-duration.js';
import { vaultMetadataOperations } from './vault-metadata.js';
import {
  mergePatch,
  secretOf,
  subkeysOf,
  type VaultWrite,
  versionMetadata,
  writeSchema,
} from './vault-secrets.js';

/** How often a patch is merged again onto a version written meanwhile before it gives up (400). */
const PATCH_ATTEMPTS = 3;
/** The page a folder is listed by (a Vault listing is the whole folder). */
const LIST_PAGE = 1000;

/**
 * The part of the request's path after `{mount}/{kind}/`, decoded; '' for the mount's root. A slash is a
 * path's own: one sent percent-encoded would move the segments' bounds, so it is refused.
 */
function vaultPathOf(req: Request, base: string): string {
  const rest = rawPath(req).slice(base.length + 1);
  if (/%2f/i.test(rest)) throw invalid('a path must not hold a percent-encoded "/"');
  try {
    return decodeURIComponent(rest).replace(/\/+$/, '');
  } catch {
    throw invalid('the path is not valid percent-encoding');
  }
}

export function vaultKvOperations({
  kv,
  mounts,
  respond,
  recordIntent,
}: {
  kv: KvService;
  mounts: readonly VaultMount[];
  respond: Responder;
  recordIntent: RecordIntent;
}): Operation[] {
  return mounts.flatMap((mount) => {
    const data = `${VAULT_ROOT}/${mount.name}/data`;
    const metadata = `${VAULT_ROOT}/${mount.name}/metadata`;
    /** The Coffer key a secret path under `base` names, or the 400 saying why it names none. */
    const keyAt = (req: Request, base: string): { namespace: string; key: string } => {
      const target = vaultKeyOf(mount, vaultPathOf(req, base));
      if (!target)
        throw invalid(
          `a secret of mount ${mount.name} is ${mount.name}/data/<namespace>/<key>: its path names a Coffer namespace and a key`,
        );
      return target;
    };
    const keyOf = (req: Request) => keyAt(req, data);
    /** The version a read path under `base` names (Vault's version 0: the latest), its read audited. */
    const readAt = async (req: Request, res: Response, base: string, version?: number) => {
      const { namespace, key } = keyAt(req, base);
      const entry = await kv.read(
        principalOf(res),
        namespace,
        key,
        version === 0 ? undefined : version,
      );
      auditTarget(res, { version: entry.version });
      return entry;
    };
    const pathTarget = (req: Request): AuditTarget => keyOf(req);
    /**
     * The caller and the key a change names, once what can be known before the body is read allows it: a
     * forbidden caller's body is never parsed.
     */
    const writer = (req: Request, res: Response) => {
      const caller = principalOf(res);
      const { namespace, key } = keyOf(req);
      if (!caller.access.mayInNamespace('write', namespace))
        throw forbidden(`write in ${namespace}`);
      return { caller, namespace, key };
    };
    const readQuery = {
      version: integer({
        minimum: 0,
        maximum: MAX_VERSION,
        description: 'the version to read; 0 or absent: the latest',
      }),
    };
    const listQuery = { list: flag({ description: "true: the folder's secrets and folders" }) };

    const read: Operation<typeof readQuery> = {
      method: 'GET',
      template: `${data}/{path}`,
      action: 'vault.read',
      dialect: 'vault',
      pathTarget,
      query: readQuery,
      docs: [
        {
          operationId: `vaultRead_${mount.name}`,
          summary: `Vault KV v2: read a secret of mount ${mount.name} (its latest version, or ?version=N)`,
          responses: { 200: { description: "Vault's envelope: data.data, data.metadata" } },
        },
      ],
      async handler(req, res, { query }) {
        let entry: Awaited<ReturnType<typeof readAt>>;
        try {
          entry = await readAt(req, res, data, query.version);
        } catch (err) {
          // Vault answers a deleted or destroyed version 404 with its metadata: when it was deleted.
          const members = err instanceof AppError ? err.members : undefined;
          const deletedAt =
            typeof members?.deleted_at === 'string' ? members.deleted_at : undefined;
          const destroyed = members?.destroyed === true;
          if (deletedAt === undefined && !destroyed) throw err;
          const { namespace, key } = keyOf(req);
          const list = await kv.versions(principalOf(res), namespace, key);
          const wanted = query.version ?? list.current_version;
          const version = list.versions.find((v) => v.version === wanted);
          if (!version) throw err;
          res.locals.outcomeCode = 'not_found';
          respond.json(
            res,
            404,
            vaultAnswer(respond.requestId(res), {
              data: null,
              metadata: versionMetadata(
                version,
                version.deleted_at ?? deletedAt ?? '',
                destroyed || version.destroyed === true,
              ),
            }),
          );
          return;
        }
        respond.json(
          res,
          200,
          vaultAnswer(respond.requestId(res), {
            data: secretOf(entry),
            metadata: versionMetadata(entry, entry.deletes_at),
          }),
        );
      },
    };

    const write = (method: 'PUT' | 'POST'): Operation<Record<string, never>, VaultWrite> => ({
      method,
      template: `${data}/{path}`,
      action: 'vault.write',
      dialect: 'vault',
      pathTarget,
      body: { schema: writeSchema, required: true },
      docs: [
        {
          operationId: `vaultWrite${method === 'PUT' ? 'Put' : 'Post'}_${mount.name}`,
          summary: `Vault KV v2: write a new version of a secret of mount ${mount.name} (options.cas: only over that version; 0: only if absent)`,
          responses: { 200: { description: "Vault's envelope: the new version's metadata" } },
        },
      ],
      async handler(req, res, input) {
        const { caller, namespace, key } = writer(req, res);
        const body = await input.body();
        let info: Awaited<ReturnType<KvService['put']>>;
        try {
          info = await kv.put(
            caller,
            namespace,
            key,
            JSON.stringify(body.data),
            mount.type,
            () => recordIntent(res, { action: 'write', namespace, key }),
            body.options?.cas,
          );
        } catch (err) {
          // Vault answers a check-and-set that does not hold, or is missing where the secret's metadata
          // requires one, with 400 and these words.
          if (err instanceof AppError && err.code === 'precondition_failed')
            throw invalid('check-and-set parameter did not match the current version');
          if (err instanceof AppError && err.code === 'precondition_required')
            throw invalid('check-and-set parameter required for this call');
          throw err;
        }
        auditTarget(res, {
          version: info.version,
          ...(info.pruned.length > 0 ? { pruned: info.pruned } : {}),
        });
        respond.json(
          res,
          200,
          vaultAnswer(respond.requestId(res), versionMetadata(info, info.deletes_at)),
        );
      },
    });

    const readMetadata: Operation<typeof listQuery> = {
      method: 'GET',
      template: `${metadata}/{path}`,
      action: 'vault.metadata',
      dialect: 'vault',
      query: listQuery,
      docs: [
        {
          operationId: `vaultMetadata_${mount.name}`,
          summary: `Vault KV v2: a secret's versions of mount ${mount.name}, or with ?list=true a folder's secrets and folders (the LIST verb is answered 303 to this form: list-verb.ts)`,
          responses: { 200: { description: "Vault's envelope: the versions, or data.keys" } },
        },
      ],
      async handler(req, res, { query }) {
        const caller = principalOf(res);
        const path = vaultPathOf(req, metadata);
        if (query.list === true) {
          res.locals.action = 'vault.list';
          const namespace = vaultNamespaceOf(mount, path);
          auditTarget(res, namespace === '' ? {} : { namespace });
          // Vault lists a folder whole: every page of it.
          const keys: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await kv.list(caller, namespace, { limit: LIST_PAGE, cursor });
            keys.push(...page.namespaces.map((n) => `${n}/`), ...page.keys);
            cursor = page.next_cursor ?? undefined;
          } while (cursor !== undefined);
          keys.sort();
          // Vault answers an empty folder as one that is not there.
          if (keys.length === 0) throw new AppError('not_found', 'nothing is listed there');
          respond.json(res, 200, vaultAnswer(respond.requestId(res), { keys }));
          return;
        }
        const target = vaultKeyOf(mount, path);
        if (!target) throw invalid(`a secret of mount ${mount.name} names a namespace and a key`);
        auditTarget(res, target);
        const list = await kv.versions(caller, target.namespace, target.key);
        const versions = Object.fromEntries(
          list.versions.map((v) => [
            String(v.version),
            versionMetadata(
              v,
              v.deleted_at ??
                v.deletes_at ??
                (v.version === list.current_version ? (list.deleted_at ?? '') : ''),
              v.destroyed === true,
            ),
          ]),
        );
        const first = list.versions[0];
        respond.json(
          res,
          200,
          vaultAnswer(respond.requestId(res), {
            cas_required: list.cas_required,
            created_time: first?.created_at ?? '',
            current_version: list.current_version,
            custom_metadata:
              Object.keys(list.custom_metadata).length > 0 ? list.custom_metadata : null,
            delete_version_after: goDuration(list.delete_version_after),
            max_versions: list.max_versions,
            oldest_version: first?.version ?? 0,
            updated_time: list.versions.at(-1)?.created_at ?? '',
            versions,
          }),
        );
      },
    };

    /**
     * Vault's `kv patch`: the secret's latest version with the body's fields merged in (RFC 7396: null
     * removes one), written as a new version over the one read — or over `options.cas` when given.
     */
    const patch: Operation<Record<string, never>, VaultWrite> = {
      method: 'PATCH',
      template: `${data}/{path}`,
      action: 'vault.patch',
      dialect: 'vault',
      pathTarget,
      body: { schema: writeSchema, required: true },
      docs: [
        {
          operationId: `vaultPatch_${mount.name}`,
          summary: `Vault KV v2: merge fields into the latest version of a secret of mount ${mount.name}`,
          responses: { 200: { description: "Vault's envelope: the new version's metadata" } },
        },
      ],
      async handler(req, res, input) {
        const { caller, namespace, key } = writer(req, res);
        const body = await input.body();
        for (let attempt = 1; ; attempt++) {
          const current = await kv.read(caller, namespace, key);
          const merged = mergePatch(secretOf(current), body.data);
          try {
            const info = await kv.put(
              caller,
              namespace,
              key,
              JSON.stringify(merged),
              current.type,
              () => recordIntent(res, { action: 'write', namespace, key }),
              body.options?.cas ?? current.version,
              body.options?.cas === undefined,
            );
            auditTarget(res, {
              version: info.version,
              ...(info.pruned.length > 0 ? { pruned: info.pruned } : {}),
            });
            respond.json(
              res,
              200,
              vaultAnswer(respond.requestId(res), versionMetadata(info, info.deletes_at)),
            );
            return;
          } catch (err) {
            if (err instanceof AppError && err.code === 'precondition_required')
              throw invalid('check-and-set parameter required for this call');
            if (!(err instanceof AppError && err.code === 'precondition_failed')) throw err;
            // Written meanwhile: merged again onto the newer version, unless the caller named one.
            if (body.options?.cas !== undefined || attempt >= PATCH_ATTEMPTS)
              throw invalid('check-and-set parameter did not match the current version');
          }
        }
      },
    };

    /** Vault's `subkeys`: the secret's fields with every value that is not an object as null. */
    const subkeys: Operation<typeof readQuery> = {
      method: 'GET',
      template: `${VAULT_ROOT}/${mount.name}/subkeys/{path}`,
      action: 'vault.subkeys',
      dialect: 'vault',
      pathTarget: (req) => keyAt(req, `${VAULT_ROOT}/${mount.name}/subkeys`),
      query: readQuery,
      docs: [
        {
          operationId: `vaultSubkeys_${mount.name}`,
          summary: `Vault KV v2: the field names of a secret of mount ${mount.name}, without its values`,
          responses: { 200: { description: "Vault's envelope: data.subkeys, data.metadata" } },
        },
      ],
      async handler(req, res, { query }) {
        const entry = await readAt(req, res, `${VAULT_ROOT}/${mount.name}/subkeys`, query.version);
        respond.json(
          res,
          200,
          vaultAnswer(respond.requestId(res), {
            subkeys: subkeysOf(secretOf(entry)),
            metadata: versionMetadata(entry, entry.deletes_at),
          }),
        );
      },
    };

    return [
      read,
      write('PUT'),
      write('POST'),
      patch,
      ...vaultDeleteOperations({ kv, mount, respond, recordIntent, keyAt }),
      ...vaultMetadataOperations({ kv, mount, respond, recordIntent, keyAt }),
      readMetadata,
      subkeys,
    ] as Operation[];
  });
}
