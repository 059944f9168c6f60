/** `coffer token create|ls|revoke` and `coffer whoami`, through the client. */
import { parseArgs } from 'node:util';
import type { CofferError } from '../client/errors.js';
import type { TokenCreateRequest } from '../client/index.js';
import { type CommandIo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { durationOption, formatAge } from './fallback.js';
import { printable } from './printable.js';
import { connect, explain } from './session.js';
import { noSuchCommand, optionSuggester } from './suggest.js';
import { scopesText, table } from './table.js';

export const TOKEN_HELP = `usage: coffer token <command> [options]

  create --role ROLE | --scope NS[:r|w|rw] … [--ttl 1h] [--name NAME] [--description TEXT] [--json]
                  a new token (root, or a token that may manage tokens). It is printed once, and never
                  stored in clear: keep it. --scope payments/prod:r reads there, payments/*:rw reads and
                  writes beneath payments; --ttl 90s, 30m, 24h or 7d (default: the server's)
  ls [--all] [--json]
                  the tokens (active ones, and role_deleted: refused since their role was deleted;
                  --all adds revoked and expired), never their values
  revoke ID       revoke a token by its id (the part between the first two _ of the token). Never pass the
                  token itself: it would show in ps and your shell's history
  revoke-self     revoke the token in use (COFFER_TOKEN or COFFER_TOKEN_FILE): any token may, but root
  renew [--json]  renew the token in use: it expires its lifetime from now, never past its creation + the
                  server's max TTL

examples:
  coffer token create --role reader --name payments-api --ttl 30d
  coffer token create --scope payments/prod:r --scope shared/*:r --json | jq -r .token > app.token
  coffer token ls --all
  coffer token revoke LCnrkdwISCNSmoLX
`;

export const WHOAMI_HELP = `usage: coffer whoami [--json]

The token's id, role or scopes, expiry, and what it may do where (its capabilities).

examples:
  coffer whoami
  COFFER_TOKEN_FILE=/run/secrets/coffer coffer whoami --json | jq .capabilities
`;

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

type Options = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

function parse(
  args: string[],
  options: Options,
): { positionals: string[]; values: Record<string, string | boolean | string[] | undefined> } {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    throw argumentsError(err, optionSuggester([...Object.keys(options), 'help']));
  }
}

function scopeOf(text: string): { namespace: string; read: boolean; write: boolean } {
  const match = /^(.+?)(?::(r|w|rw))?$/.exec(text);
  if (!match) throw new CliError(`--scope ${text}: NAMESPACE[:r|w|rw]`, EXIT.usage);
  const rights = match[2] ?? 'r';
  return { namespace: match[1]!, read: rights.includes('r'), write: rights.includes('w') };
}

export async function tokenCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  const { positionals, values: o } = parse(args, {
    role: { type: 'string' },
    scope: { type: 'string', multiple: true },
    ttl: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    all: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const [command, ...rest] = positionals;
  if (o.help || command === undefined) {
    io.write(TOKEN_HELP);
    return o.help ? EXIT.ok : EXIT.usage;
  }
  const coffer = connect(io.env);
  try {
    switch (command) {
      case 'create': {
        const scopes = (o.scope as string[] | undefined)?.map(scopeOf);
        if ((o.role === undefined) === (scopes === undefined))
          throw new CliError('token create needs exactly one of --role and --scope', EXIT.usage);
        const metadata = {
          ...(o.name === undefined ? {} : { name: o.name as string }),
          ...(o.description === undefined ? {} : { description: o.description as string }),
        };
        const request: TokenCreateRequest = {
          ...(o.role === undefined ? {} : { role: o.role as string }),
          ...(scopes === undefined ? {} : { scopes }),
          ...(o.ttl === undefined
            ? {}
            : { expires_in: durationOption(o.ttl as string, '--ttl') / 1000 }),
          ...(Object.keys(metadata).length === 0 ? {} : { metadata }),
        };
        const created = await coffer.createToken(request).catch((err: unknown) => {
          // The server's bound is in seconds: said back in the unit --ttl was given in.
          const most = /must be (?:at most|<=) (\d+)/.exec(
            (err as CofferError).errors?.find((e) => e.field === '/expires_in')?.message ?? '',
          )?.[1];
          if (o.ttl !== undefined && most !== undefined)
            throw new CliError(
              `--ttl ${o.ttl}: longer than this token may live; at most ${formatAge(Number(most) * 1000)} (${most} s) here — the server's COFFER_MAX_TTL, or what the creating token has left`,
              EXIT.usage,
            );
          throw err;
        });
        if (o.json) io.write(json(created));
        else {
          // The token alone on stdout (TOKEN=$(coffer token create …) holds nothing else); the rest is said.
          io.write(`${created.token}\n`);
          io.tell(
            `id ${created.id}, ${created.role === null ? 'scopes' : `role ${created.role}`}, expires ${created.expires_at}. It is shown this once: keep it.\n`,
          );
        }
        return EXIT.ok;
      }
      case 'ls': {
        const { tokens } = await coffer.listTokens({ all: o.all === true });
        io.write(
          o.json
            ? json({ tokens })
            : `${table(
                ['ID', 'NAME', 'ROLE / SCOPES', 'STATUS', 'EXPIRES'],
                tokens.map((t) => [
                  t.id,
                  t.metadata.name ?? '',
                  t.role ?? scopesText(t.scopes ?? []),
                  t.status ?? 'active',
                  t.expires_at,
                ]),
              )}\n`,
        );
        return EXIT.ok;
      }
      case 'renew': {
        if (rest.length > 0) throw new CliError('token renew takes no arguments', EXIT.usage);
        const renewed = await coffer.renewSelf();
        io.write(o.json ? json(renewed) : `${renewed.id} now expires ${renewed.expires_at}\n`);
        return EXIT.ok;
      }
      case 'revoke-self':
        if (rest.length > 0) throw new CliError('token revoke-self takes no arguments', EXIT.usage);
        await coffer.revokeSelf();
        if (!o.json) io.write('revoked the token in use, and every token made from it\n');
        return EXIT.ok;
      case 'revoke': {
        const id = rest[0];
        if (id === undefined || rest.length > 1)
          throw new CliError('token revoke takes one token id', EXIT.usage);
        if (!/^[A-Za-z0-9]{1,64}$/.test(id))
          throw new CliError(
            'token revoke takes the token id (the part between the first two _), never the token itself',
            EXIT.usage,
          );
        await coffer.revokeToken(id);
        if (!o.json) io.write(`revoked token ${id}, and every token made from it\n`);
        return EXIT.ok;
      }
      default:
        throw noSuchCommand('token', command, ['create', 'ls', 'revoke', 'revoke-self', 'renew']);
    }
  } catch (err) {
    throw explain(err, coffer, command === 'revoke' ? `token ${rest[0]}` : 'token');
  }
}

export async function whoamiCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  const { positionals, values: o } = parse(args, { json: { type: 'boolean' } });
  if (o.help) {
    io.write(WHOAMI_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new CliError('whoami takes no arguments', EXIT.usage);
  const coffer = connect(io.env);
  try {
    const me = await coffer.self();
    if (o.json) {
      io.write(json(me));
      return EXIT.ok;
    }
    const who = me.is_root ? 'root' : me.role !== null ? `role ${me.role}` : 'scoped';
    io.write(
      `${me.id}${me.metadata.name ? ` (${printable(me.metadata.name)})` : ''}: ${who}, expires ${me.expires_at ?? 'never'}\n\n${table(
        ['NAMESPACE', 'ACTIONS', 'TYPES'],
        me.capabilities.map((c) => [c.namespace, c.actions.join(','), c.types.join(',')]),
      )}\n`,
    );
    return EXIT.ok;
  } catch (err) {
    throw explain(err, coffer, 'whoami');
  }
}
