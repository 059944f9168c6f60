/**
 * Vault's `sys/health`, `sys/seal-status`, `sys/mounts` and `sys/internal/ui/mounts/{path}` in its dialect
 * (api/vault-dialect.ts): what `vault status`, `vault secrets list` and the Vault CLI's and Spring's mount
 * check before a KV call ask. Coffer has no seal of Vault's kind: a server that answers is unsealed; one
 * that cannot serve (its storage or audit log) answers 503 as its own health does.
 */
import type { Response } from 'express';
import { principalOf } from '../../api/context.js';
import type { Operation } from '../../api/operation.js';
import { flag, integer } from '../../api/query-params.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { VAULT_ROOT, type VaultMount, vaultAnswer } from '../../api/vault-dialect.js';
import { AppError, forbidden } from '../../errors.js';
import { ACTIONS } from '../../model/policies.js';
import { buildVersion } from '../../version.js';
import { cannotServe, type HealthCheck } from '../health.js';

/** A mount as Vault's sys/mounts describes one: a KV version 2 engine. */
function mountView(mount: VaultMount) {
  return {
    accessor: `kv_coffer_${mount.name}`,
    config: { default_lease_ttl: 0, force_no_cache: false, max_lease_ttl: 0 },
    description: `Coffer namespaces${mount.prefix === '' ? '' : ` under ${mount.prefix}`} (${mount.type} values)`,
    external_entropy_access: false,
    local: false,
    options: { version: '2' },
    seal_wrap: false,
    type: 'kv',
    uuid: `coffer-${mount.name}`,
  };
}

/** Whether the caller may do anything under the mount: only those are shown to it, as Vault shows them. */
function usable(res: Response, mount: VaultMount): boolean {
  const { access } = principalOf(res);
  return ACTIONS.some((action) =>
    mount.prefix === '' ? access.mayAnywhere(action) : access.mayBeneath(action, mount.prefix),
  );
}

export function vaultSysOperations({
  health,
  mounts,
  storage,
  respond,
}: {
  health: HealthCheck;
  mounts: readonly VaultMount[];
  /** The storage backend's name, as seal-status reports its storage type. */
  storage: string;
  respond: Responder;
}): Operation[] {
  const version = `${buildVersion().version}+coffer`;
  /** 503 when this server cannot serve, as GET /v1/sys/health decides. */
  const serving = async (): Promise<void> => {
    const report = await health.report();
    if (report.status !== 'ok') throw cannotServe(report);
  };

  // What Vault's health takes: the status to answer per state. A Coffer server that answers is active and
  // unsealed: activecode is the one that applies; the others are accepted, as Vault's clients send them.
  const code = (description: string) => integer({ minimum: 200, maximum: 599, description });
  const healthQuery = {
    standbyok: flag({ description: 'accepted; a Coffer server is never a standby' }),
    perfstandbyok: flag({ description: 'accepted; a Coffer server is never a standby' }),
    activecode: code('the status to answer while serving (default 200)'),
    standbycode: code('accepted; never used'),
    performancestandbycode: code('accepted; never used'),
    drsecondarycode: code('accepted; never used'),
    sealedcode: code('accepted; never used'),
    uninitcode: code('accepted; never used'),
  };
  const sysHealth: Operation<typeof healthQuery> = {
    method: 'GET',
    template: `${VAULT_ROOT}/sys/health`,
    action: 'vault.sys.health',
    dialect: 'vault',
    public: true,
    query: healthQuery,
    docs: [
      {
        operationId: 'vaultHealth',
        summary:
          "Vault: this server's health in Vault's shape (no token): 200 active and unsealed, 503 when it cannot serve",
        responses: {
          200: { description: 'initialized, sealed, standby, version, server_time_utc, …' },
        },
      },
    ],
    async handler(_req, res, { query }) {
      await serving();
      respond.json(res, query.activecode ?? 200, {
        initialized: true,
        sealed: false,
        standby: false,
        performance_standby: false,
        replication_performance_mode: 'disabled',
        replication_dr_mode: 'disabled',
        server_time_utc: Math.floor(Date.now() / 1000),
        version,
        cluster_name: 'coffer',
        cluster_id: '',
      });
    },
  };

  const sealStatus: Operation = {
    method: 'GET',
    template: `${VAULT_ROOT}/sys/seal-status`,
    action: 'vault.sys.seal_status',
    dialect: 'vault',
    public: true,
    docs: [
      {
        operationId: 'vaultSealStatus',
        summary:
          'Vault: the seal status `vault status` reads (no token): a Coffer server that answers is unsealed',
        responses: {
          200: { description: 'type, initialized, sealed, t, n, progress, version, …' },
        },
      },
    ],
    async handler(_req, res) {
      await serving();
      respond.json(res, 200, {
        type: 'shamir',
        initialized: true,
        sealed: false,
        t: 1,
        n: 1,
        progress: 0,
        nonce: '',
        version,
        build_date: '',
        migration: false,
        cluster_name: 'coffer',
        cluster_id: '',
        recovery_seal: false,
        storage_type: storage,
      });
    },
  };

  const mountList: Operation = {
    method: 'GET',
    template: `${VAULT_ROOT}/sys/mounts`,
    action: 'vault.sys.mounts',
    dialect: 'vault',
    docs: [
      {
        operationId: 'vaultMounts',
        summary:
          'Vault: the KV v2 mounts Coffer serves (COFFER_VAULT_MOUNTS) that the token may use (some right under its prefix), as `vault secrets list` reads them',
        responses: { 200: { description: 'each mount by "<name>/", also under data' } },
      },
    ],
    handler(_req, res) {
      const listed = Object.fromEntries(
        mounts.filter((m) => usable(res, m)).map((m) => [`${m.name}/`, mountView(m)]),
      );
      respond.json(res, 200, { ...listed, ...vaultAnswer(respond.requestId(res), listed) });
    },
  };

  const uiMount: Operation = {
    method: 'GET',
    template: `${VAULT_ROOT}/sys/internal/ui/mounts/{path}`,
    action: 'vault.sys.mount',
    dialect: 'vault',
    docs: [
      {
        operationId: 'vaultUiMount',
        summary:
          "Vault: the mount a path is under and its KV version, which Vault's CLI and Spring ask before a KV call",
        responses: {
          200: {
            description: 'data.path ("secret/"), data.type ("kv"), data.options.version ("2")',
          },
        },
      },
    ],
    handler(req, res) {
      const rest = rawPath(req).slice(`${VAULT_ROOT}/sys/internal/ui/mounts/`.length);
      const name = rest.split('/')[0];
      const mount = mounts.find((m) => m.name === name);
      if (!mount) throw new AppError('not_found', 'no such mount');
      // Vault answers a mount the token may not use 403, as it answers its paths.
      if (!usable(res, mount)) throw forbidden(`use the mount ${mount.name}`);
      respond.json(
        res,
        200,
        vaultAnswer(respond.requestId(res), { ...mountView(mount), path: `${mount.name}/` }),
      );
    },
  };

  return [sysHealth, sealStatus, mountList, uiMount] as Operation[];
}
