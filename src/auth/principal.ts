import { forbidden } from '../errors.js';
import {
  EMPTY_POLICIES,
  type LoginRole,
  type PolicyDocument,
  PRIVILEGES,
  type Privilege,
  type RoleRule,
} from '../model/policies.js';
import type { TokenMetadata, TokenRecord } from '../model/tokens.js';
import {
  type AccessPolicy,
  policyFromRules,
  policyFromScopes,
  ROOT_POLICY,
  type Scope,
} from './access.js';
import { BUILT_IN_ROLES, ROLE_PRIVILEGES, ROOT_ROLE, type RoleTable } from './roles.js';

/** Who is making a request, and what they may do. */
export interface Principal {
  /** `root`, or the token id. */
  readonly id: string;
  readonly isRoot: boolean;
  readonly role: string | null;
  readonly scopes: readonly Scope[] | null;
  readonly metadata: TokenMetadata;
  readonly expiresAt: number | null;
  /** The token that made this one, with which it is revoked; null for a token with no parent. */
  readonly parent: string | null;
  readonly access: AccessPolicy;
  /** The system endpoints this principal may use (roles.ts). */
  readonly privileges: ReadonlySet<Privilege>;
}

const NO_PRIVILEGES: ReadonlySet<Privilege> = new Set();

export function requirePrivilege(principal: Principal, privilege: Privilege): void {
  if (!principal.privileges.has(privilege))
    throw forbidden(`${privilege.replace('_', ' ')} (the ${privilege} privilege)`);
}

export const ROOT_PRINCIPAL: Principal = {
  id: 'root',
  isRoot: true,
  role: ROOT_ROLE,
  scopes: null,
  metadata: {},
  expiresAt: null,
  parent: null,
  access: ROOT_POLICY,
  privileges: new Set(PRIVILEGES),
};

/** A role as compiled for principals: its policy and its privileges. */
interface CompiledRole {
  /** A runtime role's id; none for built-in and configured roles. */
  readonly id?: string;
  readonly rules: readonly RoleRule[];
  readonly policy: AccessPolicy;
  readonly privileges: ReadonlySet<Privilege>;
  readonly source: 'built-in' | 'configuration' | 'runtime';
}

/**
 * The roles and login roles in force, and the principals for token records. Built-in and configured roles
 * are fixed; the runtime ones follow the policy document (`update`, called whenever a process reads a newer
 * one). `generation` is the document's: a principal made under another generation is made again.
 */
export class PrincipalFactory {
  private roles = new Map<string, CompiledRole>();
  private loginRoles: PolicyDocument['loginRoles'] = {};
  private fixed: ReadonlyMap<string, CompiledRole>;
  generation = -1;

  constructor(configured: RoleTable, document: PolicyDocument = EMPTY_POLICIES) {
    const fixed = new Map<string, CompiledRole>();
    for (const [name, rules] of Object.entries(BUILT_IN_ROLES))
      fixed.set(name, compile(rules, ROLE_PRIVILEGES[name] ?? [], 'built-in'));
    for (const [name, rules] of Object.entries(configured))
      if (!fixed.has(name)) fixed.set(name, compile(rules, [], 'configuration'));
    this.fixed = fixed;
    this.update(document);
  }

  /** Takes the runtime roles and login roles of `document`, when it is newer than the ones in force. */
  update(document: PolicyDocument): void {
    if (document.generation <= this.generation) return;
    const roles = new Map(this.fixed);
    for (const [name, role] of Object.entries(document.roles))
      if (!roles.has(name))
        roles.set(name, { ...compile(role.rules, role.privileges, 'runtime'), id: role.id });
    this.roles = roles;
    this.loginRoles = document.loginRoles;
    this.generation = document.generation;
  }

  hasRole(name: string): boolean {
    return this.roles.has(name);
  }

  /** Every role's name, built-in first, then the rest in name order. */
  roleNames(): string[] {
    const fixed = Object.keys(BUILT_IN_ROLES);
    return [...fixed, ...[...this.roles.keys()].filter((n) => !fixed.includes(n)).sort()];
  }

  /** A runtime role's id, for the tokens given it; undefined for the others. */
  roleId(name: string): string | undefined {
    return this.roles.get(name)?.id;
  }

  roleRules(name: string): readonly RoleRule[] | undefined {
    return this.roles.get(name)?.rules;
  }

  /** Where a role comes from, or undefined when there is none by that name. */
  roleSource(name: string): CompiledRole['source'] | undefined {
    return this.roles.get(name)?.source;
  }

  /** The policy and privileges of a role, for checking a grant against a caller's. */
  roleGrant(name: string): Pick<CompiledRole, 'policy' | 'privileges'> | undefined {
    return this.roles.get(name);
  }

  loginRole(name: string): LoginRole | undefined {
    return Object.hasOwn(this.loginRoles, name) ? this.loginRoles[name] : undefined;
  }

  /**
   * The principal of a token record; undefined when what it was given no longer exists — its role deleted
   * or removed from the configuration, or the login role it came from deleted: such a token is refused.
   */
  forToken(record: TokenRecord): Principal | undefined {
    if (record.login !== undefined) {
      const login = this.loginRole(record.login.role);
      if (login === undefined) return undefined;
      if (record.login.roleId !== undefined && record.login.roleId !== login.id) return undefined;
    }
    let access: AccessPolicy;
    let privileges: ReadonlySet<Privilege> = NO_PRIVILEGES;
    if (record.role !== null) {
      const role = this.roles.get(record.role);
      if (!role) return undefined;
      // Deleted and made again: another role by the same name, not the one this token was given.
      if (record.roleId !== undefined && record.roleId !== role.id) return undefined;
      access = role.policy;
      privileges = role.privileges;
    } else access = policyFromScopes(record.scopes ?? []);
    return {
      id: record.id,
      isRoot: false,
      role: record.role,
      scopes: record.scopes,
      metadata: record.metadata,
      expiresAt: record.expiresAt,
      parent: record.parent ?? null,
      access,
      privileges,
    };
  }
}

function compile(
  rules: readonly RoleRule[],
  privileges: readonly Privilege[],
  source: CompiledRole['source'],
): CompiledRole {
  return {
    rules,
    policy: policyFromRules(rules),
    privileges: privileges.length === 0 ? NO_PRIVILEGES : new Set(privileges),
    source,
  };
}
