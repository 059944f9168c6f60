/**
 * The TypeScript client: every endpoint of the API as a method (by area: kv-calls.ts, token-calls.ts, and
 * here roles, keyring, audit and the server's state), typed by the very declarations the server's
 * OpenAPI document is made from (api/response-schemas.ts for answers, api/schemas.ts for bodies; type
 * imports only, so the client loads nothing of the server). Only Node's own fetch; see transport.ts for
 * timeouts and retries and errors.ts for the one error class.
 *
 *   import { Coffer } from 'coffer/client';
 *   const coffer = new Coffer(); // COFFER_ADDR, and COFFER_TOKEN, COFFER_TOKEN_FILE, or a JWT login
 *                                // (COFFER_JWT_FILE with COFFER_LOGIN_ROLE, jwt-session.ts)
 *   const { value } = await coffer.get('payments/prod', 'db_password');
 */
import type {
  ApiAuditPage,
  ApiAuditPublicKey,
  ApiHealth,
  ApiKeyringStatus,
  ApiLoginRole,
  ApiLoginRoleList,
  ApiMigration,
  ApiRetirement,
  ApiRewrap,
  ApiRole,
  ApiRoleList,
  ApiRotation,
  ApiSealReport,
  ApiServerVersion,
  ApiVerification,
} from '../api/response-schemas.js';
import type { LoginRolePutRequest, RewrapRequest, RolePutRequest } from '../api/schemas.js';
import type {
  ApiWebhook,
  ApiWebhookList,
  ApiWebhookTest,
  ApiWebhookWithSecret,
  WebhookPutRequest,
} from '../api/webhook-schemas.js';
import type { AuditQuery } from './options.js';
import { query, rolePath, webhookPath } from './paths.js';
import { TokenCalls } from './token-calls.js';

export class Coffer extends TokenCalls {
  // --- roles and login roles (root, or a token with manage_roles) ---

  listRoles(options: { signal?: AbortSignal } = {}): Promise<ApiRoleList> {
    return this.call({ method: 'GET', path: '/v1/sys/roles', signal: options.signal });
  }

  getRole(name: string, options: { signal?: AbortSignal } = {}): Promise<ApiRole> {
    return this.call({ method: 'GET', path: rolePath('roles', name), signal: options.signal });
  }

  /** Creates or replaces a runtime role; effective on every worker and server within a second. */
  putRole(
    name: string,
    role: RolePutRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiRole> {
    return this.call({
      method: 'PUT',
      path: rolePath('roles', name),
      body: role,
      signal: options.signal,
    });
  }

  /** Refused (409) while live tokens or login roles name it, unless `force` (its tokens are refused then). */
  async deleteRole(
    name: string,
    options: { force?: boolean; signal?: AbortSignal } = {},
  ): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: `${rolePath('roles', name)}${query({ force: options.force || undefined })}`,
      signal: options.signal,
    });
  }

  listLoginRoles(options: { signal?: AbortSignal } = {}): Promise<ApiLoginRoleList> {
    return this.call({ method: 'GET', path: '/v1/sys/login-roles', signal: options.signal });
  }

  getLoginRole(name: string, options: { signal?: AbortSignal } = {}): Promise<ApiLoginRole> {
    return this.call({
      method: 'GET',
      path: rolePath('login-roles', name),
      signal: options.signal,
    });
  }

  putLoginRole(
    name: string,
    loginRole: LoginRolePutRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiLoginRole> {
    return this.call({
      method: 'PUT',
      path: rolePath('login-roles', name),
      body: loginRole,
      signal: options.signal,
    });
  }

  async deleteLoginRole(name: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.answer({
      method: 'DELETE',
      path: rolePath('login-roles', name),
      signal: options.signal,
    });
  }

  // --- webhooks (root, or a token with manage_webhooks) ---

  listWebhooks(options: { signal?: AbortSignal } = {}): Promise<ApiWebhookList> {
    return this.call({ method: 'GET', path: '/v1/sys/webhooks', signal: options.signal });
  }

  getWebhook(name: string, options: { signal?: AbortSignal } = {}): Promise<ApiWebhook> {
    return this.call({ method: 'GET', path: webhookPath(name), signal: options.signal });
  }

  /** Creates or changes a webhook; `secret` is in the answer when it was created or rotated, never again. */
  putWebhook(
    name: string,
    webhook: WebhookPutRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiWebhookWithSecret> {
    return this.call({
      method: 'PUT',
      path: webhookPath(name),
      body: webhook,
      signal: options.signal,
    });
  }

  async deleteWebhook(name: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.answer({ method: 'DELETE', path: webhookPath(name), signal: options.signal });
  }

  /** Sends the webhook one signed `webhook.test` message now; says whether its receiver took it. */
  testWebhook(name: string, options: { signal?: AbortSignal } = {}): Promise<ApiWebhookTest> {
    return this.call({
      method: 'POST',
      path: `${webhookPath(name)}/test`,
      signal: options.signal,
    });
  }

  // --- keyring (root) ---

  keyringStatus(options: { signal?: AbortSignal } = {}): Promise<ApiKeyringStatus> {
    return this.call({ method: 'GET', path: '/v1/sys/keyring', signal: options.signal });
  }

  rotateKeyring(options: { signal?: AbortSignal } = {}): Promise<ApiRotation> {
    return this.call({ method: 'POST', path: '/v1/sys/keyring/rotate', signal: options.signal });
  }

  startRewrap(
    request: RewrapRequest = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiRewrap> {
    return this.call({
      method: 'POST',
      path: '/v1/sys/keyring/rewrap',
      body: request,
      signal: options.signal,
    });
  }

  rewrapStatus(options: { signal?: AbortSignal } = {}): Promise<ApiRewrap> {
    return this.call({ method: 'GET', path: '/v1/sys/keyring/rewrap', signal: options.signal });
  }

  retireKeyringVersions(options: { signal?: AbortSignal } = {}): Promise<ApiRetirement> {
    return this.call({ method: 'POST', path: '/v1/sys/keyring/retire', signal: options.signal });
  }

  /** Rewraps the keyring under another master key: `{ key_provider, ...its settings }`. */
  migrateKeyring(
    request: { key_provider: string; [setting: string]: unknown },
    options: { signal?: AbortSignal } = {},
  ): Promise<ApiMigration> {
    return this.call({
      method: 'POST',
      path: '/v1/sys/keyring/migrate',
      body: request,
      signal: options.signal,
    });
  }

  // --- audit and health ---

  /** One page of audit entries matching the filters. */
  searchAudit(filters: AuditQuery = {}): Promise<ApiAuditPage> {
    const { signal, ...params } = filters;
    return this.call({ method: 'GET', path: `/v1/sys/audit${query({ ...params })}`, signal });
  }

  /** The server verifies the whole audit log (auditor or root). */
  verifyAudit(options: { signal?: AbortSignal } = {}): Promise<ApiVerification> {
    return this.call({ method: 'GET', path: '/v1/sys/audit/verify', signal: options.signal });
  }

  /** The public key the audit checkpoints are signed with (no token needed). */
  auditPublicKey(options: { signal?: AbortSignal } = {}): Promise<ApiAuditPublicKey> {
    return this.call({
      method: 'GET',
      path: '/v1/sys/audit/public-key',
      authenticated: false,
      signal: options.signal,
    });
  }

  sealReport(options: { verify?: boolean; signal?: AbortSignal } = {}): Promise<ApiSealReport> {
    return this.call({
      method: 'GET',
      path: `/v1/sys/seal-report${query({ verify: options.verify })}`,
      signal: options.signal,
    });
  }

  /** The server's release and the commit its build came from (any valid token). */
  serverVersion(options: { signal?: AbortSignal } = {}): Promise<ApiServerVersion> {
    return this.call({ method: 'GET', path: '/v1/sys/version', signal: options.signal });
  }

  /** The server's health (no token needed); a 503 answer is returned, not thrown, with its report. */
  async health(options: { signal?: AbortSignal } = {}): Promise<ApiHealth> {
    const answer = await this.answer({
      method: 'GET',
      path: '/v1/sys/health',
      authenticated: false,
      accept: [503],
      signal: options.signal,
    });
    return (
      answer.status === 503 ? (answer.body as { health: ApiHealth }).health : answer.body
    ) as ApiHealth;
  }

  /** The OpenAPI document the server publishes. */
  openApiDocument(options: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    return this.call({
      method: 'GET',
      path: '/v1/openapi.json',
      authenticated: false,
      signal: options.signal,
    });
  }
}
