/**
 * Roles: named sets of rules. The built-in roles are fixed; custom roles come from the configuration
 * (`roles`) and are validated at start-up (config/load.ts) with `checkRoleRules`.
 */
import type { ValueType } from '../model/value-types.js';
import { parsePattern } from './patterns.js';

export const ACTIONS = ['read', 'list', 'write', 'delete'] as const;
export type Action = (typeof ACTIONS)[number];

export interface RoleRule {
  readonly namespaces: readonly string[];
  readonly actions: readonly Action[];
  readonly types: readonly ValueType[];
}

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
};

/**
 * What a principal may do beyond namespaces: the system endpoints. Root holds all of them; a built-in role
 * may hold some (custom roles hold none: their rules only reach key-value data).
 *   manage_tokens   create and revoke tokens          list_tokens     list tokens (metadata only)
 *   manage_keyring  rotate, rewrap, retire, migrate    read_keyring    keyring status and rewrap progress
 *   read_audit      the audit log and the seal report
 */
export const PRIVILEGES = [
  'manage_tokens',
  'list_tokens',
  'manage_keyring',
  'read_keyring',
  'read_audit',
] as const;
export type Privilege = (typeof PRIVILEGES)[number];

export const ROLE_PRIVILEGES: Readonly<Record<string, readonly Privilege[]>> = {
  auditor: ['list_tokens', 'read_keyring', 'read_audit'],
};

/** `root` names the root token's identity; it is never a role a token can be given. */
export const ROOT_ROLE = 'root';

export const ROLE_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

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
