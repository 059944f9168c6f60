/**
 * Deleting in Vault's dialect (routes/vault-kv.ts), onto Coffer's trash (kv/deletions.ts): `DELETE
 * {mount}/data/{path}` deletes a secret, `{mount}/delete|undelete|destroy/{path} {versions}` act on its
 * versions one by one, and `DELETE {mount}/metadata/{path}` destroys every version.
 */
import type { Request } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';
import { VAULT_ROOT, type VaultMount } from '../../api/vault-dialect.js';
import { AppError } from '../../errors.js';
import type { KvService } from '../kv-service.js';
import { type VaultVersions, versionsSchema } from './vault-secrets.js';

/** What the routes of one Vault mount are made with (routes/vault-kv.ts gives them). */
export interface VaultMountRoutes {
  readonly kv: KvService;
  readonly mount: VaultMount;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
  /** The Coffer key a secret path under `base` names (a 400 when it names none). */
  readonly keyAt: (req: Request, base: string) => { namespace: string; key: string };
}

export function vaultDeleteOperations({
  kv,
  mount,
  respond,
  recordIntent,
  keyAt,
}: VaultMountRoutes): Operation[] {
  const data = `${VAULT_ROOT}/${mount.name}/data`;
  const metadata = `${VAULT_ROOT}/${mount.name}/metadata`;

  /** Vault's `DELETE {mount}/data/{path}`: the secret's latest version deleted — Coffer's trash. */
  const remove: Operation = {
    method: 'DELETE',
    template: `${data}/{path}`,
    action: 'vault.delete',
    dialect: 'vault',
    pathTarget: (req) => keyAt(req, data),
    docs: [
      {
        operationId: `vaultDelete_${mount.name}`,
        summary: `Vault KV v2: delete a secret of mount ${mount.name} (Coffer's trash: every version kept; undelete brings it back)`,
        responses: { 204: { description: 'Deleted' } },
      },
    ],
    async handler(req, res) {
      const { namespace, key } = keyAt(req, data);
      await kv.deletions.remove(principalOf(res), namespace, key, () =>
        recordIntent(res, { action: 'delete', namespace, key }),
      );
      respond.empty(res, 204);
    },
  };

  /**
   * Vault's `{mount}/delete|undelete|destroy/{path} {versions}`: those versions one by one, as Vault does
   * (kv/deletions.ts): deleting or destroying the latest version deletes the secret (Coffer's trash),
   * undeleting it brings the secret back. Versions the secret does not keep are left alone, and a secret
   * that is not there is done (204), as Vault answers.
   */
  const versionsAction = (
    kind: 'delete' | 'undelete' | 'destroy',
    method: 'PUT' | 'POST',
  ): Operation<Record<string, never>, VaultVersions> => {
    const base = `${VAULT_ROOT}/${mount.name}/${kind}`;
    return {
      method,
      template: `${base}/{path}`,
      action: `vault.${kind}`,
      dialect: 'vault',
      pathTarget: (req) => keyAt(req, base),
      body: { schema: versionsSchema, required: true },
      docs: [
        {
          operationId: `vault${kind[0]!.toUpperCase()}${kind.slice(1)}${method === 'PUT' ? 'Put' : 'Post'}_${mount.name}`,
          summary: `Vault KV v2: ${kind} versions of a secret of mount ${mount.name}, one by one (the latest: the secret itself)`,
          responses: { 204: { description: 'Done' } },
        },
      ],
      async handler(req, res, input) {
        const { namespace, key } = keyAt(req, base);
        const { versions } = await input.body();
        try {
          const change = await kv.deletions.versions(
            principalOf(res),
            namespace,
            key,
            kind,
            versions,
            () => recordIntent(res, { action: kind, namespace, key }),
          );
          auditTarget(res, { versions: change.versions });
        } catch (err) {
          if (!(err instanceof AppError && err.code === 'not_found')) throw err;
        }
        respond.empty(res, 204);
      },
    };
  };

  /** Vault's `DELETE {mount}/metadata/{path}`: every version and the key's metadata gone for good. */
  const removeAll: Operation = {
    method: 'DELETE',
    template: `${metadata}/{path}`,
    action: 'vault.delete_metadata',
    dialect: 'vault',
    pathTarget: (req) => keyAt(req, metadata),
    docs: [
      {
        operationId: `vaultDeleteMetadata_${mount.name}`,
        summary: `Vault KV v2: destroy every version of a secret of mount ${mount.name} for good, as DELETE /v1/kv?destroy=true does`,
        responses: { 204: { description: 'Deleted' } },
      },
    ],
    async handler(req, res) {
      const { namespace, key } = keyAt(req, metadata);
      await kv.deletions.destroy(principalOf(res), namespace, key, () =>
        recordIntent(res, { action: 'destroy', namespace, key }),
      );
      respond.empty(res, 204);
    },
  };

  return [
    remove,
    ...(['delete', 'undelete', 'destroy'] as const).flatMap((kind) => [
      versionsAction(kind, 'PUT'),
      versionsAction(kind, 'POST'),
    ]),
    removeAll,
  ] as Operation[];
}
