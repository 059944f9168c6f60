/**
 * HashiCorp Vault's dialect, which the operations under /vault/v1 speak (Operation.dialect) so that Vault's
 * clients — the Vault CLI, hvac, External Secrets Operator's vault provider, Vault Agent — work against
 * Coffer with nothing changed but the address (docs/vault-compatibility.md):
 *
 * - the token comes in `X-Vault-Token` (or `Authorization: Bearer`, as Coffer's own API takes it);
 * - an answer is Vault's envelope (`vaultAnswer`), a refusal `{"errors": ["…"]}` with the same status
 *   Coffer's problem has, and a secret that is not there 404 `{"errors": []}`, as Vault answers it;
 * - a Vault mount is a Coffer namespace prefix (`COFFER_VAULT_MOUNTS`), one Vault secret one Coffer key
 *   whose value is the secret's JSON object.
 */
import { type AppError, shownDetail } from '../errors.js';
import type { VaultMount } from '../model/vault-mounts.js';

export { type VaultMount, vaultMounts } from '../model/vault-mounts.js';

/** Where Vault's clients are pointed: `VAULT_ADDR=https://coffer.example/vault`. */
export const VAULT_ROOT = '/vault/v1';

/** The body of a refusal in Vault's dialect. */
export function vaultErrorBody(error: AppError): string {
  // Vault answers a secret (or path) it does not have with an empty list; its clients take that as absent.
  if (error.status === 404) return '{"errors":[]}';
  const issues = (error.issues ?? []).map(
    (issue) => `${issue.in} ${issue.field || '(whole)'}: ${issue.message}`,
  );
  return JSON.stringify({ errors: [shownDetail(error.code, error.detail), ...issues] });
}

/** Vault's envelope around an answer's `data` (a KV read, a token lookup, a listing). */
export function vaultAnswer(requestId: string, data: unknown): Record<string, unknown> {
  return {
    request_id: requestId,
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data,
    wrap_info: null,
    warnings: null,
    auth: null,
  };
}

/**
 * Where a Vault secret path lives in Coffer: the mount's prefix and the path's segments but the last make
 * the namespace, the last the key. A path of one segment under a mount at the top level names no
 * namespace: undefined.
 */
export function vaultKeyOf(
  mount: VaultMount,
  path: string,
): { namespace: string; key: string } | undefined {
  const segments = path.split('/');
  const key = segments.pop()!;
  const namespace = [mount.prefix, ...segments].filter((s) => s !== '').join('/');
  return namespace === '' || key === '' ? undefined : { namespace, key };
}

/** The Coffer namespace a Vault folder path names ('' at a top-level mount's root: every namespace). */
export function vaultNamespaceOf(mount: VaultMount, folder: string): string {
  return [mount.prefix, ...folder.split('/')].filter((s) => s !== '').join('/');
}
