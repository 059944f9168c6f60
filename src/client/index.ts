/** `coffer/client`: the TypeScript client (coffer.ts) and its one error class. */

export type {
  ApiAuditPage as AuditPage,
  ApiCreatedToken as CreatedToken,
  ApiEntry as Entry,
  ApiEntryInfo as EntryInfo,
  ApiHealth as Health,
  ApiKeyringStatus as KeyringStatus,
  ApiListing as Listing,
  ApiNamespaceValues as NamespaceValues,
  ApiSelf as Self,
  ApiToken as Token,
  ApiVerification as AuditVerification,
  ApiVersionList as VersionList,
} from '../http/response-schemas.js';
export type { TokenCreateRequest } from '../http/schemas.js';
export type {
  AuditQuery,
  CofferOptions,
  NamespaceValue,
  PageOptions,
  ValueType,
} from './coffer.js';
export { Coffer } from './coffer.js';
export { CofferError } from './errors.js';
export type { RetryPolicy } from './transport.js';
