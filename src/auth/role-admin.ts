/**
 * Managing roles and login roles at runtime (/v1/sys/roles, /v1/sys/login-roles; root, the manage_roles
 * privilege). Both live in the policy document (store/policy-records.ts); each change is one transaction,
 * taken into this process's PrincipalFactory at once and into every other process's when it next reads the
 * document (app.ts follows it: at once on PostgreSQL's NOTIFY, within a quarter second in any case).
 * Built-in and configured roles cannot be changed here. Deleting a role that live tokens or login roles
 * still name is refused with their counts unless forced; a forced delete leaves those tokens refused (401).
 * Deleting a login role refuses the tokens it issued from then on. Each change is an operator event.
 */
import { randomBase62 } from '../crypto/random.js';
import { AppError, type FieldIssue, invalid, notFound } from '../errors.js';
import type { OperatorEvents } from '../model/operator-events.js';
import {
  GRANTABLE_PRIVILEGES,
  type OidcClientSettings,
  type PolicyDocument,
  type Privilege,
  ROLE_NAME,
  type RoleRule,
  type StoredRole,
} from '../model/policies.js';
import { statusOf } from '../model/tokens.js';
import type { PolicyChange, PolicyRecords } from '../store/policy-records.js';
import type { TokenRecords } from '../store/token-records.js';
import {
  checkLoginRole,
  type LoginRoleInput,
  type LoginRoleView,
  loginRoleView,
} from './login-roles.js';
import type { PrincipalFactory } from './principal.js';
import { checkRoleRules } from './roles.js';

export interface RoleAdminDeps {
  readonly policies: Pick<PolicyRecords, 'current' | 'update'>;
  readonly tokens: Pick<TokenRecords, 'list'>;
  readonly principals: PrincipalFactory;
  readonly events: OperatorEvents;
  readonly defaultTtl: number;
  readonly maxTtl: number;
  readonly now: () => number;
  /** The most runtime roles, and login roles, the document may hold. */
  readonly most?: number;
}

export interface RoleInput {
  readonly rules: readonly RoleRule[];
  readonly privileges?: readonly Privilege[];
}

export interface RoleView {
  readonly name: string;
  readonly source: 'built-in' | 'configuration' | 'runtime';
  readonly rules: readonly RoleRule[];
  readonly privileges: readonly Privilege[];
  readonly updated_at?: string;
}

/** An in-use role's delete, refused: 409 with what still names it. */
function keptSecret(
  given: OidcClientSettings | undefined,
  stored: OidcClientSettings | undefined,
): string | undefined {
  return given && given.client_secret === undefined && stored?.client_id === given.client_id
    ? stored.client_secret
    : undefined;
}

function inUse(name: string, tokens: number, loginRoles: readonly string[]): AppError {
  const named =
    loginRoles.length > 0 ? ` and login role(s) ${loginRoles.map((n) => `"${n}"`).join(', ')}` : '';
  return new AppError(
    'conflict',
    `role "${name}" is held by ${tokens} live token(s)${named}; to delete it anyway, and have those tokens refused, force it (coffer role rm ${name} --force; DELETE …?force=true)`,
  );
}

export class RoleAdmin {
  constructor(private readonly deps: RoleAdminDeps) {}

  /** The document as stored now, taken into this process's principals. */
  async refresh(): Promise<PolicyDocument> {
    const document = await this.deps.policies.current();
    this.deps.principals.update(document);
    return document;
  }

  async listRoles(): Promise<RoleView[]> {
    const document = await this.refresh();
    return this.deps.principals
      .roleNames()
      .map((name) => this.viewOf(name, document))
      .filter((v): v is RoleView => v !== undefined);
  }

  async getRole(name: string): Promise<RoleView> {
    const view = this.viewOf(name, await this.refresh());
    if (!view) throw notFound(`no role "${name}"`);
    return view;
  }

  /** Creates or replaces a runtime role; resolves to whether it was created. */
  async putRole(name: string, input: RoleInput, by: string): Promise<boolean> {
    await this.refresh();
    const issues: FieldIssue[] = checkRoleRules(name, input.rules).map((problem) => ({
      field: '',
      in: 'body' as const,
      message: problem,
    }));
    const source = this.deps.principals.roleSource(name);
    if (source === 'configuration')
      issues.push({
        field: '',
        in: 'path',
        message: `role "${name}" comes from the configuration file; change it there`,
      });
    for (const [i, p] of (input.privileges ?? []).entries())
      if (!(GRANTABLE_PRIVILEGES as readonly string[]).includes(p))
        issues.push({
          field: `/privileges/${i}`,
          in: 'body',
          message: `must be one of ${GRANTABLE_PRIVILEGES.join(', ')}`,
        });
    if (issues.length > 0) throw invalid('invalid role', issues);
    const role: Omit<StoredRole, 'id'> = {
      rules: input.rules,
      privileges: [...new Set(input.privileges ?? [])],
      updated_at: new Date(this.deps.now()).toISOString(),
    };
    const created = await this.update<boolean>((doc) => {
      if (!Object.hasOwn(doc.roles, name) && Object.keys(doc.roles).length >= this.most)
        return { refused: invalid(`at most ${this.most} runtime roles`) };
      const id = Object.hasOwn(doc.roles, name) ? doc.roles[name]!.id : randomBase62(16);
      return {
        document: { ...doc, roles: { ...doc.roles, [name]: { id, ...role } } },
        result: !Object.hasOwn(doc.roles, name),
      };
    });
    await this.deps.events.record(
      'role.put',
      { by, role: name, created, privileges: role.privileges },
      created ? 'role created' : 'role replaced',
    );
    return created;
  }

  async deleteRole(name: string, force: boolean, by: string): Promise<void> {
    await this.refresh();
    const source = this.deps.principals.roleSource(name);
    if (source === 'built-in' || source === 'configuration')
      throw invalid(
        source === 'built-in'
          ? `role "${name}" is built in and cannot be deleted`
          : `role "${name}" comes from the configuration file; remove it there`,
      );
    const now = this.deps.now();
    const holders = (await this.deps.tokens.list()).filter(
      (t) => t.role === name && statusOf(t, now) === 'active',
    ).length;
    await this.update<undefined>((doc) => {
      if (!Object.hasOwn(doc.roles, name)) return { refused: notFound(`no role "${name}"`) };
      const namedBy = Object.entries(doc.loginRoles)
        .filter(([, l]) => l.role === name || Object.values(l.group_roles ?? {}).includes(name))
        .map(([n]) => n);
      if (!force && (holders > 0 || namedBy.length > 0))
        return { refused: inUse(name, holders, namedBy) };
      const { [name]: _gone, ...roles } = doc.roles;
      return { document: { ...doc, roles }, result: undefined };
    });
    await this.deps.events.record(
      'role.delete',
      { by, role: name, forced: force, tokens_refused: holders },
      'role deleted',
    );
  }

  async listLoginRoles(): Promise<{ name: string; login_role: LoginRoleView }[]> {
    const document = await this.refresh();
    return Object.keys(document.loginRoles)
      .sort()
      .map((name) => ({ name, login_role: loginRoleView(document.loginRoles[name]!) }));
  }

  async getLoginRole(name: string): Promise<LoginRoleView> {
    const document = await this.refresh();
    if (!Object.hasOwn(document.loginRoles, name)) throw notFound(`no login role "${name}"`);
    return loginRoleView(document.loginRoles[name]!);
  }

  async putLoginRole(name: string, input: LoginRoleInput, by: string): Promise<boolean> {
    if (!ROLE_NAME.test(name))
      throw invalid(`login role name "${name}" must match ${ROLE_NAME.source}`);
    await this.refresh();
    const { principals, defaultTtl, maxTtl, now } = this.deps;
    const role = checkLoginRole(input, {
      hasRole: (r) => principals.hasRole(r),
      defaultTtl,
      maxTtl,
      now,
    });
    const created = await this.update<boolean>((doc) => {
      if (!Object.hasOwn(doc.loginRoles, name) && Object.keys(doc.loginRoles).length >= this.most)
        return { refused: invalid(`at most ${this.most} login roles`) };
      const stored = Object.hasOwn(doc.loginRoles, name) ? doc.loginRoles[name] : undefined;
      const id = stored?.id ?? randomBase62(16);
      // What GET shows can be put back: a secret left out is kept while the client stays the same.
      const kept = keptSecret(role.oidc, stored?.oidc);
      return {
        document: {
          ...doc,
          loginRoles: {
            ...doc.loginRoles,
            [name]: {
              ...role,
              ...(kept ? { oidc: { ...role.oidc!, client_secret: kept } } : {}),
              id,
            },
          },
        },
        result: !Object.hasOwn(doc.loginRoles, name),
      };
    });
    await this.deps.events.record(
      'login_role.put',
      { by, login_role: name, issuer: role.issuer, created },
      created ? 'login role created' : 'login role replaced',
    );
    return created;
  }

  async deleteLoginRole(name: string, by: string): Promise<void> {
    await this.update<undefined>((doc) => {
      if (!Object.hasOwn(doc.loginRoles, name))
        return { refused: notFound(`no login role "${name}"`) };
      const { [name]: _gone, ...loginRoles } = doc.loginRoles;
      return { document: { ...doc, loginRoles }, result: undefined };
    });
    await this.deps.events.record(
      'login_role.delete',
      { by, login_role: name },
      'login role deleted: the tokens it issued are refused from now on',
    );
  }

  private get most(): number {
    return this.deps.most ?? 1000;
  }

  private async update<T>(change: PolicyChange<T>): Promise<T> {
    const result = await this.deps.policies.update(change);
    // This process knows at once; the others when they next read the document.
    this.deps.principals.update(await this.deps.policies.current());
    return result;
  }

  private viewOf(name: string, document: PolicyDocument): RoleView | undefined {
    const source = this.deps.principals.roleSource(name);
    const grant = this.deps.principals.roleGrant(name);
    if (!source || !grant) return undefined;
    const stored = source === 'runtime' ? document.roles[name] : undefined;
    return {
      name,
      source,
      rules: this.deps.principals.roleRules(name) ?? [],
      privileges: [...grant.privileges],
      ...(stored ? { updated_at: stored.updated_at } : {}),
    };
  }
}
