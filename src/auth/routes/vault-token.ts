/**
 * Vault's `auth/token/lookup-self`, `renew-self` and `revoke-self` in its dialect (api/vault-dialect.ts), which Vault's
 * clients call to check the token they hold (External Secrets Operator reads `type`, `ttl` and
 * `expire_time`; the Vault CLI's `vault token lookup`). `id` and `accessor` are the Coffer token's id,
 * never the token itself.
 */
import { auditTarget } from '../../api/audit-target.js';
import { principalOf } from '../../api/context.js';
import type { RecordIntent } from '../../api/feature.js';
import type { Operation } from '../../api/operation.js';
import type { Responder } from '../../api/respond.js';
import { VAULT_ROOT, vaultAnswer } from '../../api/vault-dialect.js';
import type { Principal } from '../principal.js';
import type { TokenService } from '../token-service.js';

/** Vault's renew-self body: an increment, which Coffer takes and does not follow (its renewals are fixed). */
const renewSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    increment: {
      anyOf: [
        { type: 'string', maxLength: 32 },
        { type: 'integer', minimum: 0 },
      ],
    },
  },
} as const;

/** The token as Vault's lookup-self describes one (the fields its clients read). */
function lookupOf(caller: Principal, now: number) {
  const expires = caller.expiresAt;
  return {
    accessor: caller.id,
    creation_time: 0,
    creation_ttl: 0,
    display_name: caller.metadata.name ?? (caller.isRoot ? 'root' : 'token'),
    entity_id: '',
    expire_time: expires === null ? null : new Date(expires).toISOString(),
    explicit_max_ttl: 0,
    id: caller.id,
    meta: Object.keys(caller.metadata).length > 0 ? caller.metadata : null,
    num_uses: 0,
    // Vault's orphan: a token with no parent. A delegated token is revoked with the token that made it.
    orphan: caller.parent === null,
    path: caller.isRoot ? 'auth/token/root' : 'auth/token/create',
    policies: [caller.role ?? 'scoped'],
    renewable: !caller.isRoot,
    ttl: expires === null ? 0 : Math.max(0, Math.floor((expires - now) / 1000)),
    type: 'service',
  };
}

export function vaultTokenOperations({
  tokens,
  respond,
  recordIntent,
  now,
}: {
  tokens: TokenService;
  respond: Responder;
  recordIntent: RecordIntent;
  now: () => number;
}): Operation[] {
  const lookupSelf: Operation = {
    method: 'GET',
    template: `${VAULT_ROOT}/auth/token/lookup-self`,
    action: 'vault.token.lookup_self',
    dialect: 'vault',
    docs: [
      {
        operationId: 'vaultLookupSelf',
        summary:
          "Vault: the calling token, as Vault's lookup-self describes one (never the token itself)",
        responses: {
          200: { description: "Vault's envelope: data.id, ttl, expire_time, policies, …" },
        },
      },
    ],
    handler(_req, res) {
      respond.json(
        res,
        200,
        vaultAnswer(respond.requestId(res), lookupOf(principalOf(res), now())),
      );
    },
  };

  const revokeSelf: Operation = {
    method: 'POST',
    template: `${VAULT_ROOT}/auth/token/revoke-self`,
    action: 'vault.token.revoke_self',
    dialect: 'vault',
    docs: [
      {
        operationId: 'vaultRevokeSelf',
        summary: 'Vault: revoke the calling token (as POST /v1/auth/token/revoke-self); 204',
        responses: { 204: { description: 'Revoked' } },
      },
    ],
    async handler(_req, res) {
      const caller = principalOf(res);
      if (!caller.isRoot) auditTarget(res, { subject_token_id: caller.id });
      await tokens.revokeSelf(caller, (id, also) =>
        recordIntent(res, {
          action: 'token.revoke',
          subject_token_id: id,
          also_revoked: also?.length ? also : undefined,
        }),
      );
      respond.empty(res, 204);
    },
  };

  /**
   * Renews the calling token as POST /v1/auth/token/renew does: it lasts the lifetime it was created with
   * from now, never past its creation + the server's max TTL. Vault's `increment` is accepted and not
   * followed. The answer is Vault's auth block without the token (client_token ''): the caller has it.
   */
  const renewSelf: Operation<Record<string, never>, { increment?: string | number }> = {
    method: 'POST',
    template: `${VAULT_ROOT}/auth/token/renew-self`,
    action: 'vault.token.renew_self',
    dialect: 'vault',
    body: { schema: renewSchema, required: false },
    docs: [
      {
        operationId: 'vaultRenewSelf',
        summary:
          "Vault: renew the calling token (as POST /v1/auth/token/renew), answered with Vault's auth block",
        responses: { 200: { description: "Vault's envelope: auth.lease_duration, renewable, …" } },
      },
    ],
    async handler(_req, res, input) {
      await input.body();
      const caller = principalOf(res);
      if (!caller.isRoot) auditTarget(res, { subject_token_id: caller.id });
      const renewed = await tokens.renewSelf(caller);
      const policies = [renewed.role ?? 'scoped'];
      respond.json(res, 200, {
        ...vaultAnswer(respond.requestId(res), null),
        auth: {
          client_token: '',
          accessor: renewed.id,
          policies,
          token_policies: policies,
          metadata: renewed.metadata,
          lease_duration: Math.max(0, Math.floor((Date.parse(renewed.expires_at) - now()) / 1000)),
          renewable: true,
          entity_id: '',
          token_type: 'service',
          orphan: caller.parent === null,
        },
      });
    },
  };

  return [lookupSelf, revokeSelf, renewSelf] as Operation[];
}
