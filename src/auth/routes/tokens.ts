/** /v1/auth/... token operations: who am I, create, list, renew and revoke tokens (logins: login.ts). */

import type { Request, Response } from 'express';
import { auditTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import { flag } from '../../api/query-params.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { createdToken, ok, self, token, tokenList } from '../../api/response-schemas.js';
import { tokenCreateSchema } from '../../api/schemas.js';
import { notFound } from '../../errors.js';
import { isTokenId, parseToken } from '../token-format.js';
import type { BeforeTokenCommit, CreateTokenInput, TokenService } from '../token-service.js';

export interface AuthRouteDeps {
  readonly tokens: TokenService;
  /** The longest lifetime a token may be given (seconds), for the create schema. */
  readonly maxTtl: number;
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

export function tokenOperations({
  tokens,
  maxTtl,
  respond,
  recordIntent,
}: AuthRouteDeps): Operation[] {
  /** The intent of a revocation: the token, and the tokens it created that go with it. */
  const revokeIntent =
    (res: Response): BeforeTokenCommit =>
    (id, also) =>
      recordIntent(res, {
        action: 'token.revoke',
        subject_token_id: id,
        also_revoked: also?.length ? also : undefined,
      });

  const me: Operation = {
    method: 'GET',
    template: '/v1/auth/me',
    action: 'token.self',
    docs: [
      {
        operationId: 'getSelf',
        summary: 'Identity, role and capabilities of the calling token',
        responses: {
          200: ok('The caller', self),
        },
      },
    ],
    handler(_req, res) {
      respond.json(res, 200, tokens.describe(principalOf(res)));
    },
  };

  const create: Operation<never, CreateTokenInput> = {
    method: 'POST',
    template: '/v1/auth/token',
    action: 'token.create',
    body: { schema: tokenCreateSchema(maxTtl), required: true },
    docs: [
      {
        operationId: 'createToken',
        summary:
          'Create a token: root any; a token whose role grants create_tokens (admin) one with at most its own rights and expiry, listed as its child and revoked with it',
        responses: {
          201: ok('The new token; its value is shown only here', createdToken),
        },
        errors: [403],
      },
    ],
    async handler(_req, res, input) {
      const created = await tokens.create(principalOf(res), await input.body(), (id) =>
        recordIntent(res, { action: 'token.create', subject_token_id: id }),
      );
      auditTarget(res, { subject_token_id: created.id });
      respond.json(res, 201, created);
    },
  };

  const listQuery = { all: flag({ description: 'also revoked and expired tokens' }) };
  const list: Operation<typeof listQuery> = {
    method: 'GET',
    template: '/v1/auth/tokens',
    action: 'token.list',
    query: listQuery,
    docs: [
      {
        operationId: 'listTokens',
        summary:
          'List tokens: every token for root and auditor (list_tokens), the tokens it created and theirs for a token with create_tokens; active ones unless all=true',
        responses: {
          200: ok('Tokens, without values or hashes', tokenList),
        },
        errors: [403],
      },
    ],
    async handler(_req, res, { query }) {
      respond.json(res, 200, { tokens: await tokens.list(principalOf(res), query.all === true) });
    },
  };

  const revoke: Operation = {
    method: 'DELETE',
    template: '/v1/auth/token/{token}',
    action: 'token.revoke',
    docs: [
      {
        operationId: 'revokeToken',
        summary:
          'Revoke a token by value or id, and the tokens it created (root any; a token with create_tokens those it created)',
        pathParams: [{ name: 'token', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { 204: { description: 'Revoked (also when it already was)' } },
        errors: [403, 404],
      },
    ],
    async handler(req, res) {
      const subject = tokenInPath(req);
      // Only ever the id: the path may hold a whole token value.
      const id = parseToken(subject)?.id ?? (isTokenId(subject) ? subject : undefined);
      if (id !== undefined) auditTarget(res, { subject_token_id: id });
      await tokens.revoke(principalOf(res), subject, revokeIntent(res));
      respond.empty(res, 204);
    },
  };

  const revokeSelf: Operation = {
    method: 'POST',
    template: '/v1/auth/token/revoke-self',
    action: 'token.revoke',
    docs: [
      {
        operationId: 'revokeSelf',
        summary:
          'Revoke the calling token (any token; the root token cannot be revoked: 400). Later calls with it are 401',
        responses: { 204: { description: 'Revoked' } },
      },
    ],
    async handler(_req, res) {
      const caller = principalOf(res);
      if (!caller.isRoot) auditTarget(res, { subject_token_id: caller.id });
      await tokens.revokeSelf(caller, revokeIntent(res));
      respond.empty(res, 204);
    },
  };

  const renew: Operation = {
    method: 'POST',
    template: '/v1/auth/token/renew',
    action: 'token.renew',
    docs: [
      {
        operationId: 'renewSelf',
        summary:
          "Renew the calling token: it expires the lifetime it was created with from now, but never later than its creation + the server's max TTL (the root token does not expire: 400)",
        responses: { 200: ok('The token, with its new expiry', token) },
      },
    ],
    async handler(_req, res) {
      const caller = principalOf(res);
      if (!caller.isRoot) auditTarget(res, { subject_token_id: caller.id });
      respond.json(res, 200, await tokens.renewSelf(caller));
    },
  };

  return [me, create, list, revoke, revokeSelf, renew] as Operation[];
}
