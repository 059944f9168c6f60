import { forbidden } from '../errors.js';
import type { TokenMetadata, TokenRecord } from '../model/tokens.js';
import {
  type AccessPolicy,
  policyFromRules,
  policyFromScopes,
  ROOT_POLICY,
  type Scope,
} from './access.js';
import { PRIVILEGES, type Privilege, ROLE_PRIVILEGES, ROOT_ROLE, type RoleTable } from './roles.js';

/** Who is making a request, and what they may do. */
export interface Principal {
  /** `root`, or the token id. */
  readonly id: string;
  readonly isRoot: boolean;
  readonly role: string | null;
  readonly scopes: readonly Scope[] | null;
  readonly metadata: TokenMetadata;
  readonly expiresAt: number | null;
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
  access: ROOT_POLICY,
  privileges: new Set(PRIVILEGES),
};

/** Compiles role policies once; hands out principals for token records. */
export class PrincipalFactory {
  private readonly rolePolicies: ReadonlyMap<string, AccessPolicy>;

  constructor(readonly roles: RoleTable) {
    this.rolePolicies = new Map(
      Object.entries(roles).map(([name, rules]) => [name, policyFromRules(rules)]),
    );
  }

  hasRole(name: string): boolean {
    return this.rolePolicies.has(name);
  }

  forToken(record: TokenRecord): Principal {
    const access =
      record.role !== null
        ? this.rolePolicies.get(record.role)
        : policyFromScopes(record.scopes ?? []);
    // A role removed from the configuration leaves its tokens with no rights at all.
    return {
      id: record.id,
      isRoot: false,
      role: record.role,
      scopes: record.scopes,
      metadata: record.metadata,
      expiresAt: record.expiresAt,
      access: access ?? policyFromScopes([]),
      privileges:
        record.role === null ? NO_PRIVILEGES : new Set(ROLE_PRIVILEGES[record.role] ?? []),
    };
  }
}
