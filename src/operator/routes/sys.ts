/**
 * /v1/sys/keyring... — key management: status and rewrap progress (root and auditor), rotate, rewrap,
 * retire and migrate to another master key (root only). The services record each operation as an operator
 * event (operator/keyring-operations.ts, operator/rewrap.ts); these handlers only check and answer.
 */

import { principalOf } from '../../api/context.js';
import { migrateSchema } from '../../api/migrate-schema.js';
import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';
import {
  keyringStatus,
  migration,
  ok,
  retirement,
  rewrapView,
  rotation,
  serverVersion,
} from '../../api/response-schemas.js';
import { rewrapSchema } from '../../api/schemas.js';
import { buildVersion } from '../../version.js';
import type { KeyringOperations } from '../keyring-operations.js';
import type { MigrateRequest } from '../migrate-key.js';
import type { Rewrapper, RewrapState } from '../rewrap.js';

export interface SysRouteDeps {
  readonly rewrapper: Rewrapper;
  readonly operations: KeyringOperations;
  readonly respond: Responder;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function view(state: RewrapState | null, running: boolean) {
  if (!state)
    return {
      running,
      target_version: null,
      total: 0,
      examined: 0,
      rewrapped: 0,
      failed: 0,
      started_at: null,
      updated_at: null,
      finished_at: null,
    };
  return {
    running,
    target_version: state.target,
    total: state.total,
    examined: state.examined,
    rewrapped: state.rewrapped,
    failed: state.failed,
    started_at: iso(state.startedAt),
    updated_at: iso(state.updatedAt),
    finished_at: iso(state.finishedAt),
  };
}

export function sysOperations(deps: SysRouteDeps): Operation[] {
  const { respond, operations, rewrapper } = deps;
  const status: Operation = {
    method: 'GET',
    template: '/v1/sys/keyring',
    action: 'keyring.status',
    privilege: 'read_keyring',
    docs: [
      {
        operationId: 'getKeyringStatus',
        summary:
          'Keyring status (root and auditor): provider, versions, the active one, and how many records each wraps',
        responses: {
          200: ok('Status', keyringStatus),
        },
      },
    ],
    async handler(_req, res) {
      respond.json(res, 200, await operations.status());
    },
  };

  const version: Operation = {
    method: 'GET',
    template: '/v1/sys/version',
    action: 'version',
    docs: [
      {
        operationId: 'getServerVersion',
        summary:
          "This server's release and the commit its build came from (any valid token: `coffer --version --remote`)",
        responses: { 200: ok('The version', serverVersion) },
      },
    ],
    handler(_req, res) {
      respond.json(res, 200, buildVersion());
    },
  };

  const rotate: Operation = {
    method: 'POST',
    template: '/v1/sys/keyring/rotate',
    action: 'keyring.rotate',
    privilege: 'manage_keyring',
    docs: [
      {
        operationId: 'rotateKeyring',
        summary: 'Add a keyring version and make it active for every process (root only)',
        responses: {
          200: ok('Rotated', rotation),
        },
      },
    ],
    async handler(_req, res) {
      respond.json(res, 200, await operations.rotate(principalOf(res).id));
    },
  };

  const startRewrap: Operation<never, { batch_size?: number } | undefined> = {
    method: 'POST',
    template: '/v1/sys/keyring/rewrap',
    action: 'keyring.rewrap',
    privilege: 'manage_keyring',
    body: { schema: rewrapSchema, required: false },
    docs: [
      {
        operationId: 'startRewrap',
        summary:
          'Start (or continue) rewrapping every record onto the active version, in the background (root only)',
        responses: { 202: ok('Started, or already running', rewrapView) },
      },
    ],
    async handler(_req, res, input) {
      const body = await input.body();
      const state = await rewrapper.start(body?.batch_size ?? 500, principalOf(res).id);
      respond.json(res, 202, view(state, true));
    },
  };

  const rewrapProgress: Operation = {
    method: 'GET',
    template: '/v1/sys/keyring/rewrap',
    action: 'keyring.rewrap.status',
    privilege: 'read_keyring',
    docs: [
      {
        operationId: 'getRewrapStatus',
        summary: 'Progress of the current or last rewrap (root and auditor)',
        responses: { 200: ok('Progress', rewrapView) },
      },
    ],
    async handler(_req, res) {
      const state = await rewrapper.state();
      respond.json(res, 200, view(state, rewrapper.running(state)));
    },
  };

  const retire: Operation = {
    method: 'POST',
    template: '/v1/sys/keyring/retire',
    action: 'keyring.retire',
    privilege: 'manage_keyring',
    docs: [
      {
        operationId: 'retireKeyringVersions',
        summary: 'Remove keyring versions that no record uses any more (root only)',
        responses: {
          200: ok('Retired', retirement),
        },
      },
    ],
    async handler(_req, res) {
      respond.json(res, 200, await operations.retire(principalOf(res).id));
    },
  };

  const migrate: Operation<never, MigrateRequest> = {
    method: 'POST',
    template: '/v1/sys/keyring/migrate',
    action: 'keyring.migrate',
    privilege: 'manage_keyring',
    body: { schema: migrateSchema, required: true },
    docs: [
      {
        operationId: 'migrateKeyring',
        summary:
          'Rewrap the keyring under another master key or provider, in one atomic write (root only); restart with the new key configured',
        responses: {
          200: ok('Migrated', migration),
        },
      },
    ],
    async handler(_req, res, input) {
      const { from, to } = await operations.migrate(principalOf(res).id, await input.body());
      respond.json(res, 200, {
        from: from.description,
        to: to.description,
        provider: to.provider,
        migrated_at: iso(to.migratedAt),
      });
    },
  };

  return [status, rotate, startRewrap, rewrapProgress, retire, migrate, version] as Operation[];
}
