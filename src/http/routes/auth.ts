/** /v1/auth/... routes: each a short list of named steps; errors go to the problem handler. */

import type { Request, Response } from 'express';
import { requirePrivilege } from '../../auth/principal.js';
import { isTokenId, parseToken } from '../../auth/token-format.js';
import type { CreateTokenInput, TokenService } from '../../auth/token-service.js';
import { notFound } from '../../errors.js';
import { auditTarget } from '../audit-target.js';
import { principalOf } from '../authenticate.js';
import type { RecordIntent } from '../request-audit.js';
import { booleanFlag, queryOf, rawPath } from '../request-parts.js';
import type { Responder } from '../respond.js';
import type { BodyValidator } from '../validate.js';

export interface AuthRouteDeps {
  readonly tokens: TokenService;
  readonly readBody: (req: Request, res: Response) => Promise<unknown>;
  readonly validateCreate: BodyValidator<CreateTokenInput>;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
}

const TOKEN_PATH = '/v1/auth/token/';

/** The {token} of /v1/auth/token/{token}: one path segment, percent-decoded. */
function tokenInPath(req: Request): string {
  const rest = rawPath(req).slice(TOKEN_PATH.length);
  try {
    const token = decodeURIComponent(rest);
    if (rest !== '' && !rest.includes('/')) return token;
  } catch {
    // fall through: not a token
  }
  throw notFound('no such token');
}

export function authRoutes({
  tokens,
  readBody,
  validateCreate,
  respond,
  recordIntent,
}: AuthRouteDeps) {
  return {
    me(req: Request, res: Response): void {
      queryOf(req, []);
      respond.json(res, 200, tokens.describe(principalOf(res)));
    },

    async create(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_tokens');
      queryOf(req, []);
      const input = validateCreate(await readBody(req, res));
      const created = await tokens.create(caller, input, (id) =>
        recordIntent(res, { action: 'token.create', subject_token_id: id }),
      );
      auditTarget(res, { subject_token_id: created.id });
      respond.json(res, 201, created);
    },

    async list(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'list_tokens');
      const all = booleanFlag('all', queryOf(req, ['all']).all);
      respond.json(res, 200, { tokens: await tokens.list(caller, all) });
    },

    async revoke(req: Request, res: Response): Promise<void> {
      const caller = principalOf(res);
      requirePrivilege(caller, 'manage_tokens');
      queryOf(req, []);
      const subject = tokenInPath(req);
      // Only ever the id: the path may hold a whole token value.
      const id = parseToken(subject)?.id ?? (isTokenId(subject) ? subject : undefined);
      if (id !== undefined) auditTarget(res, { subject_token_id: id });
      await tokens.revoke(caller, subject, (id) =>
        recordIntent(res, { action: 'token.revoke', subject_token_id: id }),
      );
      respond.empty(res, 204);
    },
  };
}
