/**
 * `coffer export --ns NAMESPACE [--ns …] --format dotenv|json|shell`: the variables `coffer run` would set,
 * written to stdout (never to a file: redirect it where you choose), each quoted so that its format reads it
 * back byte for byte:
 *
 *   dotenv  read back exactly by Node's own parser (`node --env-file`, util.parseEnv), the dotenv package
 *           and a POSIX shell that sources the file (`set -a; . ./app.env`), and never code to any of them:
 *           VAR='value' (taken literally, line breaks included) when the value holds no '; else "value" when
 *           it holds none of " \ $ ` (the shell expands $ and `, Node's parser turns \n into a line break).
 *           A value it cannot write so — one with a ' and one of those, or a carriage return (which the
 *           parsers drop) — is an error naming it (use json or shell). Never backticks: a shell that sources
 *           VAR=`value` runs the value as a command.
 *   json    one object, {"VAR": "value", …}
 *   shell   export VAR='value', with each ' written '\\'' — POSIX sh, bash, zsh: eval "$(coffer export …)"
 */

import { type CommandIo, processIo } from './command-io.js';
import { environmentOf, MappingError } from './env-names.js';
import { CliError, EXIT } from './exit-codes.js';
import { loginEnvironment, parseValueOptions } from './run.js';
import { connect, explain } from './session.js';
import { fetchValues, requireValues } from './values-source.js';

export const EXPORT_HELP = `usage: coffer export --ns NAMESPACE [--ns …] [--format dotenv|json|shell] [--prefix P] [--only KEY] [--map KEY=VAR] [--allow-var VAR] [--allow-empty]

Writes the variables coffer run would set to stdout, quoted for the format (default dotenv). The values
are in plaintext in the output: send it where it is needed, not to a file you keep. --jwt-file FILE
--login-role NAME log in with a JWT instead of a token, as for coffer run. A namespace that gives no value
(not found: a typo?) is exit 3, unless --allow-empty. A value written by a token that could not read every
value of its namespace does not name its own variable (coffer run --help): --allow-var VAR names it.

examples:
  coffer export --ns payments/prod --format json | jq 'keys'
  eval "$(coffer export --ns payments/prod --format shell)"
  coffer export --ns payments/prod --only db_password > /run/app/secrets.env   # a tmpfs
`;

const FORMATS = ['dotenv', 'json', 'shell'] as const;
type Format = (typeof FORMATS)[number];

const singleQuoted = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

function dotenvValue(name: string, value: string): string {
  // The parsers drop a carriage return wherever it is, quoted or not.
  if (value.includes('\r'))
    throw new CliError(
      `${name}: its value holds a carriage return, which dotenv cannot keep; use --format json or shell`,
      EXIT.failure,
    );
  if (!value.includes("'")) return `'${value}'`;
  // In double quotes a shell that sources the file expands $ and ` (running what they name), and treats \;
  // Node's parser turns \n into a line break.
  if (!/["\\$`]/.test(value)) return `"${value}"`;
  throw new CliError(
    `${name}: its value holds ' and one of " \\ $ \`, which dotenv cannot quote so that Node's parser and a shell both read it exactly (and neither runs it); use --format json or shell`,
    EXIT.failure,
  );
}

export function formatVariables(variables: ReadonlyMap<string, string>, format: Format): string {
  if (format === 'json') return `${JSON.stringify(Object.fromEntries(variables), null, 2)}\n`;
  let text = '';
  for (const [name, value] of variables)
    text +=
      format === 'shell'
        ? `export ${name}=${singleQuoted(value)}\n`
        : `${name}=${dotenvValue(name, value)}\n`;
  return text;
}

export async function exportCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  const options = parseValueOptions(args, { format: { type: 'string' } });
  if (options.help) {
    io.write(EXPORT_HELP);
    return EXIT.ok;
  }
  if (!options.ns?.length)
    throw new CliError('coffer export needs --ns NAMESPACE (coffer export --help)', EXIT.usage);
  const format = (options.format as string | undefined) ?? 'dotenv';
  if (!(FORMATS as readonly string[]).includes(format))
    throw new CliError(`--format ${format}: dotenv, json or shell`, EXIT.usage);
  const coffer = connect(loginEnvironment(options, io.env));
  let values: Awaited<ReturnType<typeof fetchValues>>;
  try {
    values = await fetchValues(coffer, options.ns);
  } catch (err) {
    throw explain(err, coffer, (err as { namespace?: string }).namespace ?? options.ns.join(', '));
  }
  requireValues(values, options.ns, options['allow-empty'] === true);
  try {
    io.write(formatVariables(environmentOf(values, options), format as Format));
  } catch (err) {
    if (err instanceof MappingError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  return EXIT.ok;
}
