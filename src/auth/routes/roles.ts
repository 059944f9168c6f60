/**
 * /v1/sys/roles and /v1/sys/login-roles — custom roles and login roles managed at runtime (root: the
 * manage_roles privilege). The service (auth/role-admin.ts) checks each change, stores it and records it as
 * an operator event; these handlers only read the request and answer.
 */
import type { Request } from 'express';
import { principalOf } from '../../api/context.js';
import type { Operation } from '../../api/operation.js';
import { flag } from '../../api/query-params.js';
import { rawPath } from '../../api/request-parts.js';
import type { Responder } from '../../api/respond.js';
import { loginRole, loginRoleList, ok, roleList, roleView } from '../../api/response-schemas.js';
import { loginRolePutSchema, rolePutSchema } from '../../api/schemas.js';
import { invalid, notFound } from '../../errors.js';
import { ROLE_NAME as NAME } from '../../model/policies.js';
import type { LoginRoleInput } from '../login-roles.js';
import type { RoleAdmin, RoleInput } from '../role-admin.js';

export interface RoleRouteDeps {
  readonly roles: RoleAdmin;
  /** The longest lifetime a token may be given (seconds), for the login-role schema. */
  readonly maxTtl: number;
  readonly respond: Responder;
}

/**
 * The {name} of `prefix`/{name}: one path segment that can be a role's name. Anything else is no such role
 * (404), or for a PUT, a name that cannot be given (400).
 */
function nameIn(req: Request, prefix: string, what: string): string {
  const name = rawPath(req).slice(prefix.length + 1);
  if (NAME.test(name)) return name;
  if (req.method === 'PUT')
    throw invalid(`a ${what} name must match ${NAME.source}`, [
      { field: '/name', in: 'path', message: `must match ${NAME.source}` },
    ]);
  throw notFound(`no ${what} "${name.slice(0, 64)}"`);
}

const nameParam = [
  {
    name: 'name',
    in: 'path',
    required: true,
    schema: { type: 'string', pattern: NAME.source },
  },
];

export function roleOperations({ roles, maxTtl, respond }: RoleRouteDeps): Operation[] {
  const list: Operation = {
    method: 'GET',
    template: '/v1/sys/roles',
    action: 'role.list',
    privilege: 'manage_roles',
    docs: [
      {
        operationId: 'listRoles',
        summary: 'Every role: built-in, from the configuration file, and managed at runtime (root)',
        responses: { 200: ok('The roles', roleList) },
      },
    ],
    async handler(_req, res) {
      respond.json(res, 200, { roles: await roles.listRoles() });
    },
  };

  const get: Operation = {
    method: 'GET',
    template: '/v1/sys/roles/{name}',
    action: 'role.read',
    privilege: 'manage_roles',
    docs: [
      {
        operationId: 'getRole',
        summary: 'One role (root)',
        pathParams: nameParam,
        responses: { 200: ok('The role', roleView) },
        errors: [404],
      },
    ],
    async handler(req, res) {
      respond.json(res, 200, await roles.getRole(nameIn(req, '/v1/sys/roles', 'role')));
    },
  };

  const put: Operation<never, RoleInput> = {
    method: 'PUT',
    template: '/v1/sys/roles/{name}',
    action: 'role.put',
    privilege: 'manage_roles',
    body: { schema: rolePutSchema, required: true },
    docs: [
      {
        operationId: 'putRole',
        summary:
          'Create or replace a custom role (root); effective on every worker and server within a second. Built-in and configured roles cannot be changed',
        pathParams: nameParam,
        responses: {
          200: ok('Replaced', roleView),
          201: ok('Created', roleView),
        },
      },
    ],
    async handler(req, res, input) {
      const name = nameIn(req, '/v1/sys/roles', 'role');
      const created = await roles.putRole(name, await input.body(), principalOf(res).id);
      respond.json(res, created ? 201 : 200, await roles.getRole(name));
    },
  };

  const removeQuery = {
    force: flag({
      description: 'delete even while live tokens or login roles name it: those tokens are refused',
    }),
  };
  const remove: Operation<typeof removeQuery> = {
    method: 'DELETE',
    template: '/v1/sys/roles/{name}',
    action: 'role.delete',
    privilege: 'manage_roles',
    query: removeQuery,
    docs: [
      {
        operationId: 'deleteRole',
        summary:
          'Delete a runtime role (root); refused (409, with counts) while live tokens or login roles name it, unless force=true',
        pathParams: nameParam,
        responses: { 204: { description: 'Deleted' } },
        errors: [404, 409],
      },
    ],
    async handler(req, res, { query }) {
      const name = nameIn(req, '/v1/sys/roles', 'role');
      await roles.deleteRole(name, query.force === true, principalOf(res).id);
      respond.empty(res, 204);
    },
  };

  const listLogin: Operation = {
    method: 'GET',
    template: '/v1/sys/login-roles',
    action: 'login_role.list',
    privilege: 'manage_roles',
    docs: [
      {
        operationId: 'listLoginRoles',
        summary: 'Every login role (root)',
        responses: { 200: ok('The login roles, by name', loginRoleList) },
      },
    ],
    async handler(_req, res) {
      respond.json(res, 200, { login_roles: await roles.listLoginRoles() });
    },
  };

  const getLogin: Operation = {
    method: 'GET',
    template: '/v1/sys/login-roles/{name}',
    action: 'login_role.read',
    privilege: 'manage_roles',
    docs: [
      {
        operationId: 'getLoginRole',
        summary: 'One login role (root)',
        pathParams: nameParam,
        responses: { 200: ok('The login role', loginRole) },
        errors: [404],
      },
    ],
    async handler(req, res) {
      const name = nameIn(req, '/v1/sys/login-roles', 'login role');
      respond.json(res, 200, await roles.getLoginRole(name));
    },
  };

  const putLogin: Operation<never, LoginRoleInput> = {
    method: 'PUT',
    template: '/v1/sys/login-roles/{name}',
    action: 'login_role.put',
    privilege: 'manage_roles',
    body: { schema: loginRolePutSchema(maxTtl), required: true },
    docs: [
      {
        operationId: 'putLoginRole',
        summary:
          'Create or replace a login role (root): which JWTs POST /v1/auth/login/jwt accepts, and the token they buy',
        pathParams: nameParam,
        responses: {
          200: ok('Replaced', loginRole),
          201: ok('Created', loginRole),
        },
      },
    ],
    async handler(req, res, input) {
      const name = nameIn(req, '/v1/sys/login-roles', 'login role');
      const created = await roles.putLoginRole(name, await input.body(), principalOf(res).id);
      respond.json(res, created ? 201 : 200, await roles.getLoginRole(name));
    },
  };

  const removeLogin: Operation = {
    method: 'DELETE',
    template: '/v1/sys/login-roles/{name}',
    action: 'login_role.delete',
    privilege: 'manage_roles',
    docs: [
      {
        operationId: 'deleteLoginRole',
        summary:
          'Delete a login role (root): no more logins with it, and the tokens it issued are refused from then on',
        pathParams: nameParam,
        responses: { 204: { description: 'Deleted' } },
        errors: [404],
      },
    ],
    async handler(req, res) {
      const name = nameIn(req, '/v1/sys/login-roles', 'login role');
      await roles.deleteLoginRole(name, principalOf(res).id);
      respond.empty(res, 204);
    },
  };

  return [list, get, put, remove, listLogin, getLogin, putLogin, removeLogin] as Operation[];
}
