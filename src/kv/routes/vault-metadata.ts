/**
 * Vault's metadata writes (routes/vault-kv.ts), onto a key's own metadata (PATCH /v1/kv/{ns}/{key}):
 * `POST|PUT {mount}/metadata/{path}` sets `custom_metadata` (replaced) and `max_versions`; `PATCH` merges
 * `custom_metadata` (null removes a field); `cas_required` and `delete_version_after` (a duration, kept in
 * whole seconds: vault-duration.ts) as the key's own. POST and PUT keep the metadata of a secret not
 * written yet, for its first version (kv/deletions.ts, keepsVersions); PATCH needs the secret.
 */
import { principalOf } from '../../api/context.js';
import type { Operation } from '../../api/operation.js';
import { MAX_DELETE_AFTER_SECONDS, MAX_KEPT_VERSIONS } from '../../api/schemas.js';
import { VAULT_ROOT } from '../../api/vault-dialect.js';
import { invalid } from '../../errors.js';
import { METADATA_LIMITS } from '../../model/tokens.js';
import type { VaultMountRoutes } from './vault-deletes.js';
import { vaultDurationSeconds } from './vault-duration.js';

interface VaultMetadataWrite {
  readonly max_versions?: number;
  readonly cas_required?: boolean;
  readonly delete_version_after?: string | number;
  readonly custom_metadata?: Record<string, string | null> | null;
}

function metadataSchema(nullable: boolean) {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      max_versions: { type: 'integer', minimum: 0, maximum: MAX_KEPT_VERSIONS },
      cas_required: { type: 'boolean' },
      delete_version_after: {
        anyOf: [{ type: 'string', maxLength: 64 }, { type: 'integer' }],
      },
      custom_metadata: {
        type: nullable ? ['object', 'null'] : 'object',
        maxProperties: METADATA_LIMITS.fields,
        additionalProperties: false,
        patternProperties: {
          [METADATA_LIMITS.field.source]: nullable
            ? { type: ['string', 'null'], maxLength: METADATA_LIMITS.value }
            : { type: 'string', maxLength: METADATA_LIMITS.value },
        },
      },
    },
  } as const;
}

export function vaultMetadataOperations({
  kv,
  mount,
  respond,
  recordIntent,
  keyAt,
}: VaultMountRoutes): Operation[] {
  const metadata = `${VAULT_ROOT}/${mount.name}/metadata`;
  const write = (
    method: 'POST' | 'PUT' | 'PATCH',
  ): Operation<Record<string, never>, VaultMetadataWrite> => ({
    method,
    template: `${metadata}/{path}`,
    action: 'vault.metadata_write',
    dialect: 'vault',
    pathTarget: (req) => keyAt(req, metadata),
    body: { schema: metadataSchema(method === 'PATCH'), required: true },
    docs: [
      {
        operationId: `vaultMetadataWrite${method[0]}${method.slice(1).toLowerCase()}_${mount.name}`,
        summary: `Vault KV v2: set a secret's custom_metadata, max_versions, cas_required and delete_version_after, mount ${mount.name}`,
        responses: { 204: { description: 'Set' } },
      },
    ],
    async handler(req, res, input) {
      const caller = principalOf(res);
      const { namespace, key } = keyAt(req, metadata);
      const body = await input.body();
      const deleteAfter =
        body.delete_version_after === undefined
          ? undefined
          : vaultDurationSeconds(body.delete_version_after);
      if (deleteAfter === undefined && body.delete_version_after !== undefined)
        throw invalid(
          'delete_version_after must be a duration of whole seconds, not negative (30s, 1h30m, 7d, 3600)',
        );
      if (deleteAfter !== undefined && deleteAfter > MAX_DELETE_AFTER_SECONDS)
        throw invalid(`delete_version_after is at most ${MAX_DELETE_AFTER_SECONDS} seconds`);
      let custom: Record<string, string> | undefined;
      if (method === 'PATCH' && body.custom_metadata) {
        // Merged into what the key keeps: null removes a field.
        const now = (await kv.versions(caller, namespace, key)).custom_metadata;
        const merged: Record<string, string> = { ...now };
        for (const [name, value] of Object.entries(body.custom_metadata))
          if (value === null) delete merged[name];
          else merged[name] = value;
        custom = merged;
      } else if (body.custom_metadata !== undefined)
        custom = (body.custom_metadata ?? {}) as Record<string, string>;
      const change = {
        ...(custom === undefined ? {} : { custom_metadata: custom }),
        ...(body.max_versions === undefined ? {} : { max_versions: body.max_versions }),
        ...(body.cas_required === undefined ? {} : { cas_required: body.cas_required }),
        ...(deleteAfter === undefined ? {} : { delete_version_after: deleteAfter }),
      };
      // POST and PUT keep metadata for a secret not written yet, as Vault does: External Secrets
      // Operator's PushSecret writes the metadata of a new secret before its first version.
      if (Object.keys(change).length > 0)
        await kv.setMetadata(
          caller,
          namespace,
          key,
          change,
          () => recordIntent(res, { action: 'metadata', namespace, key }),
          method === 'PATCH' ? undefined : mount.type,
        );
      respond.empty(res, 204);
    },
  });
  return [write('POST'), write('PUT'), write('PATCH')];
}
