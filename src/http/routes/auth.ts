/** /v1/auth/... routes: each a short list of named steps; errors go to the problem handler. */
import type { Request, Response } from 'express';
import { requireRoot, type CreateTokenInput, type TokenService } from '../../auth/token-service.js';
import { principalOf } from '../authenticate.js';
import { booleanFlag, queryOf } from '../request-parts.js';
import type { BodyValidator } from '../validate.js';

export interface AuthRouteDeps {
  readonly tokens: TokenService;
  readonly readBody: (req: Request, res: Response) => Promise<unknown>;
  readonly validateCreate: BodyValidator<CreateTokenInput>;
}

export function authRoutes({ tokens, readBody, validateCreate }: AuthRouteDeps) {
  return {
    me(req: Request, res: Response): void {
      queryOf(req, []);
      res.json(tokens.describe(principalOf(res)));
    },

    async create(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requireRoot(caller);
      queryOf(req, []);
      const input = validateCreate(await readBody(req, res));
      res.status(201).json(await tokens.create(caller, input));
    },

    async list(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requireRoot(caller);
      const all = booleanFlag('all', queryOf(req, ['all']).all);
      res.json({ tokens: await tokens.list(caller, all) });
    },

    async revoke(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requireRoot(caller);
      queryOf(req, []);
      await tokens.revoke(caller, String(req.params.token));
      res.status(204).end();
    },
  };
}
