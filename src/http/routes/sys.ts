/**
 * /v1/sys/keyring... — key management: status and rewrap progress (root and auditor), rotate, rewrap,
 * retire and migrate to another master key (root only). The services record each operation as an operator
 * event (operator/keyring-operations.ts, operator/rewrap.ts); these handlers only check and answer.
 */
import type { Request, Response } from 'express';
import { requirePrivilege } from '../../auth/principal.js';
import type { KeyringOperations } from '../../operator/keyring-operations.js';
import type { MigrateRequest } from '../../operator/migrate-key.js';
import type { Rewrapper, RewrapState } from '../../operator/rewrap.js';
import { principalOf } from '../authenticate.js';
import { hasBody, queryOf } from '../request-parts.js';
import type { Responder } from '../respond.js';
import type { BodyValidator } from '../validate.js';

export interface SysRouteDeps {
  readonly rewrapper: Rewrapper;
  readonly readBody: (req: Request, res: Response) => Promise<unknown>;
  readonly validateRewrap: BodyValidator<{ batch_size?: number }>;
  readonly validateMigrate: BodyValidator<MigrateRequest>;
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

export function sysRoutes(deps: SysRouteDeps) {
  const { respond, operations } = deps;
  return {
    async status(req: Request, res: Response): Promise<void> {
      requirePrivilege(principalOf(res), 'read_keyring');
      queryOf(req, []);
      respond.json(res, 200, await operations.status());
    },

    async rotate(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_keyring');
      queryOf(req, []);
      respond.json(res, 200, await operations.rotate(caller.id));
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
      respond.json(res, 200, await operations.retire(caller.id));
    },

    async migrate(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_keyring');
      queryOf(req, []);
      const request = deps.validateMigrate(await deps.readBody(req, res));
      const { from, to } = await operations.migrate(caller.id, request);
      respond.json(res, 200, {
        from: from.description,
        to: to.description,
        provider: to.provider,
        migrated_at: iso(to.migratedAt),
      });
    },
  };
}
