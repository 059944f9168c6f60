/** `coffer/client`: the TypeScript client (coffer.ts) and its one error class. */

export type {
  ApiAuditPage as AuditPage,
  ApiCreatedToken as CreatedToken,
  ApiEntry as Entry,
  ApiEntryInfo as EntryInfo,
  ApiHealth as Health,
  ApiKeyringStatus as KeyringStatus,
  ApiListing as Listing,
  ApiLoginRole as LoginRole,
  ApiLoginRoleList as LoginRoleList,
  ApiNamespaceValues as NamespaceValues,
  ApiOidcStart as OidcStart,
  ApiRole as Role,
  ApiRoleList as RoleList,
  ApiSelf as Self,
  ApiServerVersion as ServerVersion,
  ApiToken as Token,
  ApiVerification as AuditVerification,
  ApiVersionList as VersionList,
} from '../api/response-schemas.js';
export type {
  LoginOidcCallbackRequest,
  LoginOidcStartRequest,
  LoginRolePutRequest,
  RolePutRequest,
  TokenCreateRequest,
} from '../api/schemas.js';
export type {
  ApiWebhook as Webhook,
  ApiWebhookList as WebhookList,
  ApiWebhookTest as WebhookTest,
  ApiWebhookWithSecret as WebhookWithSecret,
  WebhookPutRequest,
} from '../api/webhook-schemas.js';
export { Coffer } from './coffer.js';
export { CofferError } from './errors.js';
export type {
  ChangeEvent,
  EventKind,
  EventsOptions,
  KeyChangeEvent,
  KeyringRotatedEvent,
  TokenRevokedEvent,
} from './events.js';
export type { JwtLogin, TokenCache } from './jwt-session.js';
export type {
  AuditQuery,
  CofferOptions,
  ListOptions,
  NamespaceValue,
  PageOptions,
  ValueType,
} from './options.js';
export type { RetryPolicy } from './transport.js';
