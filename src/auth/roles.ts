/**
 * Roles: named sets of rules. The built-in roles are fixed; custom roles come from the configuration
 * (`roles`, validated at start-up by config/load.ts with `checkRoleRules`) or are managed at runtime
 * (PUT /v1/sys/roles/{name}, checked the same way).
 */
import { type Privilege, ROLE_NAME, type RoleRule } from '../model/policies.js';
import { parsePattern } from './patterns.js';

export type RoleTable = Readonly<Record<string, readonly RoleRule[]>>;

export const BUILT_IN_ROLES: RoleTable = {
  // Sees that keys, versions and tokens exist, never a value; reads the audit log and the seal report.
  auditor: [{ namespaces: ['*'], actions: ['list'], types: ['config', 'secret'] }],
  admin: [
    {
      namespaces: ['*'],
      actions: ['read', 'list', 'write', 'delete'],
      types: ['config', 'secret'],
    },
  ],
  writer: [{ namespaces: ['*'], actions: ['read', 'list', 'write'], types: ['config', 'secret'] }],
  reader: [{ namespaces: ['*'], actions: ['read', 'list'], types: ['config', 'secret'] }],
  'config-reader': [{ namespaces: ['*'], actions: ['read', 'list'], types: ['config'] }],
  // For Prometheus: the metrics (GET /v1/sys/metrics), and nothing of any namespace.
  metrics: [],
};

/**
 * What a principal may do beyond namespaces: the system endpoints (model/policies.ts lists them). Root holds
 * all of them; a built-in role may hold some; a custom role those it is given from GRANTABLE_PRIVILEGES.
 *   manage_tokens   create and revoke any token       create_tokens   create tokens with at most its own
 *                                                                     rights, listed as its children
 *   list_tokens     list tokens (metadata only)       manage_keyring  rotate, rewrap, retire, migrate
 *   read_keyring    keyring status, rewrap progress   read_audit      the audit log and the seal report
 *   manage_roles    custom roles and login roles       read_metrics    GET /v1/sys/metrics
 *   manage_webhooks webhooks (/v1/sys/webhooks)
 */
export const ROLE_PRIVILEGES: Readonly<Record<string, readonly Privilege[]>> = {
  auditor: ['list_tokens', 'read_keyring', 'read_audit'],
  admin: ['create_tokens'],
  metrics: ['read_metrics'],
};

/** `root` names the root token's identity; it is never a role a token can be given. */
export const ROOT_ROLE = 'root';

/** Problems with one custom role, as sentences; empty when the role is valid. */
export function checkRoleRules(name: string, rules: readonly RoleRule[]): string[] {
  const problems: string[] = [];
  if (!ROLE_NAME.test(name)) problems.push(`role name "${name}" must match ${ROLE_NAME.source}`);
  if (name === ROOT_ROLE || name in BUILT_IN_ROLES)
    problems.push(`role "${name}" is built in and cannot be redefined`);
  rules.forEach((rule, i) => {
    for (const ns of rule.namespaces) {
      if (!parsePattern(ns))
        problems.push(`role "${name}" rule ${i}: "${ns}" is not a valid namespace pattern`);
    }
  });
  return problems;
}

/** Built-in roles plus the configured ones. */
export function roleTable(custom: RoleTable): RoleTable {
  return { ...BUILT_IN_ROLES, ...custom };
}
