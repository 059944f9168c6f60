/**
 * /v1/sys/keyring... — key management: status and rewrap progress (root and auditor), rotate, rewrap,
 * retire and migrate to another master key (root only). Each operation is an operator event (audit/events.ts) naming who and what (`keyring.*`).
 */
import type { Request, Response } from 'express';
import type { OperatorEvents } from '../../audit/events.js';
import { requirePrivilege } from '../../auth/principal.js';
import { keyringStatus } from '../../operator/keyring-status.js';
import { type MigrateRequest, migrateKey } from '../../operator/migrate-key.js';
import type { Rewrapper, RewrapState } from '../../operator/rewrap.js';
import type { StorageBackend } from '../../storage/backend.js';
import type { KeyringHolder } from '../../store/keyring-store.js';
import { principalOf } from '../authenticate.js';
import { hasBody, queryOf } from '../request-parts.js';
import type { Responder } from '../respond.js';
import type { BodyValidator } from '../validate.js';

export interface SysRouteDeps {
  readonly storage: StorageBackend;
  readonly keyring: KeyringHolder;
  readonly rewrapper: Rewrapper;
  readonly readBody: (req: Request, res: Response) => Promise<unknown>;
  readonly validateRewrap: BodyValidator<{ batch_size?: number }>;
  readonly validateMigrate: BodyValidator<MigrateRequest>;
  /** This server's COFFER_PKCS11_PIN, for a migration to a pkcs11 key that names no PIN file. */
  readonly pkcs11Pin: string | undefined;
  readonly respond: Responder;
  readonly events: OperatorEvents;
  readonly now: () => number;
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

export function sysRoutes(deps: SysRouteDeps) {
  const { respond, events } = deps;
  return {
    async status(req: Request, res: Response): Promise<void> {
      requirePrivilege(principalOf(res), 'read_keyring');
      queryOf(req, []);
      respond.json(res, 200, await keyringStatus(deps.storage, deps.keyring));
    },

    async rotate(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_keyring');
      queryOf(req, []);
      const previous = deps.keyring.current().activeVersion;
      const active = await deps.keyring.rotate(deps.now());
      await events.record(
        'keyring.rotate',
        { by: caller.id, previous_version: previous, active_version: active },
        'keyring rotated',
      );
      respond.json(res, 200, { previous_version: previous, active_version: active });
    },

    async startRewrap(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_keyring');
      queryOf(req, []);
      const body = hasBody(req) ? deps.validateRewrap(await deps.readBody(req, res)) : {};
      const state = await deps.rewrapper.start(body.batch_size ?? 500, caller.id);
      respond.json(res, 202, view(state, true));
    },

    async rewrapProgress(req: Request, res: Response): Promise<void> {
      requirePrivilege(principalOf(res), 'read_keyring');
      queryOf(req, []);
      const state = await deps.rewrapper.state();
      respond.json(res, 200, view(state, deps.rewrapper.running(state)));
    },

    async retire(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_keyring');
      queryOf(req, []);
      const status = await keyringStatus(deps.storage, deps.keyring);
      const unused = status.versions
        .filter((v) => !v.active && v.secrets === 0 && v.configs === 0)
        .map((v) => v.version);
      if (unused.length > 0) {
        await deps.keyring.retire(unused);
        await events.record(
          'keyring.retire',
          { by: caller.id, retired_versions: unused },
          'keyring versions retired',
        );
      }
      const still = status.versions
        .filter((v) => !unused.includes(v.version))
        .map((v) => v.version);
      respond.json(res, 200, { retired: unused, versions: still });
    },

    async migrate(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_keyring');
      queryOf(req, []);
      const request = deps.validateMigrate(await deps.readBody(req, res));
      const { from, to } = await migrateKey(deps.keyring, request, deps.pkcs11Pin, deps.now());
      await events.record(
        'keyring.migrate',
        { by: caller.id, from: from.description, to: to.description, migrations: to.migrations },
        'master key migrated',
      );
      respond.json(res, 200, {
        from: from.description,
        to: to.description,
        provider: to.provider,
        migrated_at: iso(to.migratedAt),
      });
    },
  };
}
