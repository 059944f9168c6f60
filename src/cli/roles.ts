/** `coffer role …` and `coffer role login …`: the runtime roles and login roles, through the client. */
import { parseArgs } from 'node:util';
import type { Coffer, LoginRole, LoginRolePutRequest, RolePutRequest } from '../client/index.js';
import { type CommandIo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { fileProblem } from './file-errors.js';
import { connect, explain } from './session.js';
import { scopesText, table } from './table.js';

export const ROLE_HELP = `usage: coffer role <command> [options]      (root, or a token with manage_roles)

  ls [--json]           every role: built-in, from the configuration file, and runtime
  show NAME             one role's rules and privileges, as JSON
  put NAME (--rule NAMESPACES:ACTIONS:TYPES … [--privilege P …] | --file FILE)
                        create or replace a runtime role; every worker and server enforces it within a
                        second. --rule 'payments/*,shared:read,list:config,secret' (namespaces, actions
                        read/list/write/delete, types config/secret, each comma-separated); --privilege
                        create_tokens, list_tokens, read_keyring or read_audit; --file takes the JSON of
                        PUT /v1/sys/roles/NAME ({"rules": […], "privileges": […]}), - for stdin
  rm NAME [--force]     delete a runtime role; refused while live tokens or login roles name it, unless
                        --force, after which those tokens are refused

  login ls [--json]             the login roles (which JWTs buy which token: docs/identity.md)
  login show NAME               one login role, as JSON
  login put NAME --file FILE    create or replace one from the JSON of PUT /v1/sys/login-roles/NAME
  login rm NAME                 delete one: no more logins with it, and its tokens are refused

examples:
  coffer role put payments-reader --rule 'payments/*:read,list:config,secret'
  coffer role put ops --rule '*:read,list:config' --privilege read_audit --privilege read_keyring
  coffer role login put payments-pods --file payments-pods.json
  coffer role rm payments-reader --force
`;

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

type Values = Record<string, string | boolean | string[] | undefined>;

/** NAMESPACES:ACTIONS:TYPES, each a comma-separated list. */
function ruleOf(text: string): RolePutRequest['rules'][number] {
  const parts = text.split(':');
  const list = (part: string | undefined) =>
    (part ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const [namespaces, actions, types] = [list(parts[0]), list(parts[1]), list(parts[2])];
  if (parts.length !== 3 || !namespaces.length || !actions.length || !types.length)
    throw new CliError(
      `--rule ${text}: NAMESPACES:ACTIONS:TYPES, e.g. 'payments/*:read,list:config,secret'`,
      EXIT.usage,
    );
  // The server checks each word and answers with the field at fault.
  return { namespaces, actions, types } as RolePutRequest['rules'][number];
}

function jsonFile<T>(io: CommandIo, file: string): T {
  let text: string;
  try {
    text = io.read(file);
  } catch (err) {
    throw new CliError(`--file ${file}: ${fileProblem(err, 'cannot read it')}`, EXIT.usage);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new CliError(`--file ${file}: not JSON`, EXIT.usage);
  }
}

function oneName(rest: string[], usage: string): string {
  if (rest.length !== 1) throw new CliError(`coffer role ${usage}`, EXIT.usage);
  return rest[0]!;
}

async function roles(coffer: Coffer, io: CommandIo, command: string, rest: string[], o: Values) {
  switch (command) {
    case 'ls': {
      const { roles } = await coffer.listRoles();
      io.write(
        o.json
          ? json({ roles })
          : `${table(
              ['NAME', 'SOURCE', 'RULES', 'PRIVILEGES'],
              roles.map((r) => [
                r.name,
                r.source,
                r.rules
                  .map(
                    (u) => `${u.namespaces.join(',')}:${u.actions.join(',')}:${u.types.join(',')}`,
                  )
                  .join(' '),
                r.privileges.join(','),
              ]),
            )}\n`,
      );
      return EXIT.ok;
    }
    case 'show':
      io.write(json(await coffer.getRole(oneName(rest, 'show NAME'))));
      return EXIT.ok;
    case 'put': {
      const name = oneName(rest, 'put NAME (--rule … | --file FILE)');
      const rules = o.rule as string[] | undefined;
      const privileges = o.privilege as string[] | undefined;
      if ((rules === undefined) === (o.file === undefined))
        throw new CliError('role put needs --rule (one or more) or --file, not both', EXIT.usage);
      if (o.file !== undefined && privileges !== undefined)
        throw new CliError('--privilege goes with --rule (put them in the file)', EXIT.usage);
      const role: RolePutRequest =
        rules === undefined
          ? jsonFile<RolePutRequest>(io, o.file as string)
          : {
              rules: rules.map(ruleOf),
              ...(privileges ? { privileges: privileges as RolePutRequest['privileges'] } : {}),
            };
      const saved = await coffer.putRole(name, role);
      io.write(o.json ? json(saved) : `role ${saved.name} saved\n`);
      return EXIT.ok;
    }
    case 'rm': {
      const name = oneName(rest, 'rm NAME [--force]');
      await coffer.deleteRole(name, { force: o.force === true });
      if (!o.json)
        io.write(
          `role ${name} removed${o.force ? '; the tokens that held it are refused from now' : ''}\n`,
        );
      return EXIT.ok;
    }
    default:
      throw new CliError(
        `coffer role ${command}: no such command (coffer role --help)`,
        EXIT.usage,
      );
  }
}

/** What a login role gives, in one cell: its groups' roles first, then what anyone else gets. */
function givesText(l: LoginRole): string {
  const groups = Object.entries(l.group_roles ?? {}).map(([group, role]) => `${group}→${role}`);
  const rest =
    l.role !== undefined
      ? `role ${l.role}`
      : l.scopes !== undefined
        ? scopesText(l.scopes)
        : undefined;
  const gives = [
    ...(groups.length > 0 ? [`groups ${groups.join(',')}`] : []),
    ...(rest === undefined ? [] : [groups.length > 0 ? `else ${rest}` : rest]),
  ].join('; ');
  return l.oidc ? `${gives} (people: oidc)` : gives;
}

async function loginRoles(
  coffer: Coffer,
  io: CommandIo,
  command: string,
  rest: string[],
  o: Values,
) {
  switch (command) {
    case 'ls': {
      const { login_roles } = await coffer.listLoginRoles();
      io.write(
        o.json
          ? json({ login_roles })
          : `${table(
              ['NAME', 'ISSUER', 'GIVES', 'TTL'],
              login_roles.map(({ name, login_role: l }) => [
                name,
                l.issuer,
                givesText(l),
                `${l.ttl}s (max ${l.max_ttl}s)`,
              ]),
            )}\n`,
      );
      return EXIT.ok;
    }
    case 'show':
      io.write(json(await coffer.getLoginRole(oneName(rest, 'login show NAME'))));
      return EXIT.ok;
    case 'put': {
      const name = oneName(rest, 'login put NAME --file FILE');
      if (o.file === undefined) throw new CliError('role login put needs --file FILE', EXIT.usage);
      const saved = await coffer.putLoginRole(
        name,
        jsonFile<LoginRolePutRequest>(io, o.file as string),
      );
      io.write(o.json ? json(saved) : `login role ${name} saved\n`);
      return EXIT.ok;
    }
    case 'rm': {
      const name = oneName(rest, 'login rm NAME');
      await coffer.deleteLoginRole(name);
      if (!o.json) io.write(`login role ${name} removed\n`);
      return EXIT.ok;
    }
    default:
      throw new CliError(
        `coffer role login ${command}: no such command (coffer role --help)`,
        EXIT.usage,
      );
  }
}

export async function roleCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  let parsed: { positionals: string[]; values: Values };
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        rule: { type: 'string', multiple: true },
        privilege: { type: 'string', multiple: true },
        file: { type: 'string' },
        force: { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw argumentsError(err);
  }
  const { positionals, values: o } = parsed;
  const login = positionals[0] === 'login';
  const [command, ...rest] = login ? positionals.slice(1) : positionals;
  if (o.help || command === undefined) {
    io.write(ROLE_HELP);
    return o.help ? EXIT.ok : EXIT.usage;
  }
  const coffer = connect(io.env);
  try {
    return await (login ? loginRoles : roles)(coffer, io, command, rest, o);
  } catch (err) {
    throw explain(err, coffer, `${login ? 'login role' : 'role'} ${rest[0] ?? ''}`.trim());
  }
}
