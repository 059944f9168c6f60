/**
 * `coffer run --ns NAMESPACE [--ns …] [options] -- COMMAND [ARGS…]`: fetches every value the token may read
 * in the namespaces, maps them to environment variables (cli/env-names.ts) and runs COMMAND with them:
 * its stdin, stdout and stderr are this process's, every signal this process receives is passed on to it,
 * and its exit code (or the signal that ended it) becomes this process's. The values go to the child's
 * environment only: never a file in plaintext, never a command line. The child does not inherit
 * COFFER_TOKEN, COFFER_TOKEN_FILE or COFFER_FALLBACK_KEY.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { environmentOf, MappingError } from './env-names.js';
import { CliError, EXIT } from './exit-codes.js';
import { fallbackKey, parseDuration } from './fallback.js';
import { connect } from './session.js';
import { type FallbackOptions, valuesWithFallback } from './values-source.js';

export const RUN_HELP = `usage: coffer run --ns NAMESPACE [--ns …] [options] -- COMMAND [ARGS…]

Runs COMMAND with every value the token may read directly in the namespaces as environment variables.
A key's variable is its name in upper case with . and - made _ (db_password → DB_PASSWORD); two keys
that come to one variable, or a key that gives no valid name, is an error naming them.

  --ns NAMESPACE            a namespace to read (repeatable; later ones do not override earlier ones)
  --prefix PREFIX           put PREFIX before every variable's name (APP_ → APP_DB_PASSWORD)
  --only KEY                keep only this key (repeatable; NAMESPACE/KEY for one namespace's)
  --map KEY=VAR             name KEY's variable VAR (repeatable; NAMESPACE/KEY=VAR for one namespace's)
  --fallback FILE           keep an encrypted copy of the values in FILE (0600, written atomically), and
                            start from it when Coffer cannot be reached, saying so on stderr
  --fallback-max-age AGE    refuse a copy older than AGE (default 24h; 90s, 30m, 24h, 7d)
  --fallback-key-file FILE  the copy's key: 32 random bytes (or COFFER_FALLBACK_KEY, hex or base64)

The token comes from COFFER_TOKEN or COFFER_TOKEN_FILE, the server from COFFER_ADDR. The exit code is
COMMAND's; before it starts: 2 bad arguments or no token, 3 a namespace not found, 4 denied,
5 Coffer unreachable (and no usable fallback copy), 126/127 COMMAND not executable / not found.

examples:
  coffer run --ns payments/prod -- node server.js
  coffer run --ns payments/prod --ns shared/prod --prefix APP_ -- ./start.sh
  coffer run --ns payments/prod --only db_password --map db_password=PGPASSWORD -- psql
  coffer run --ns payments/prod --fallback /var/lib/app/coffer.fallback \\
      --fallback-key-file /etc/app/fallback.key --fallback-max-age 24h -- node server.js
`;

/** Variables the child never inherits: they would let it read more than it was given. */
const WITHHELD = ['COFFER_TOKEN', 'COFFER_TOKEN_FILE', 'COFFER_FALLBACK_KEY'];

/** The signals passed on to the child (SIGKILL and SIGSTOP cannot be caught). */
const FORWARDED: NodeJS.Signals[] = [
  'SIGINT',
  'SIGTERM',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGWINCH',
  'SIGCONT',
];

export interface RunIo {
  readonly env: NodeJS.ProcessEnv;
  readonly out: (line: string) => void;
  readonly warn: (line: string) => void;
}

const defaultIo: RunIo = {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  warn: (line) => process.stderr.write(`${line}\n`),
};

/** Splits `args` at the first `--`: coffer's options before it, the command after. */
export function splitCommand(args: readonly string[]): { own: string[]; command: string[] } {
  const at = args.indexOf('--');
  return at < 0
    ? { own: [...args], command: [] }
    : { own: args.slice(0, at), command: args.slice(at + 1) };
}

export function parseValueOptions(
  args: string[],
  extra: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {},
) {
  try {
    return parseArgs({
      args,
      allowPositionals: false,
      options: {
        ns: { type: 'string', multiple: true },
        prefix: { type: 'string' },
        only: { type: 'string', multiple: true },
        map: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
        ...extra,
      },
    }).values as {
      ns?: string[];
      prefix?: string;
      only?: string[];
      map?: string[];
      help?: boolean;
      [more: string]: unknown;
    };
  } catch (err) {
    throw new CliError((err as Error).message, EXIT.usage);
  }
}

export async function runCommand(args: string[], io: RunIo = defaultIo): Promise<number> {
  const { own, command } = splitCommand(args);
  const options = parseValueOptions(own, {
    fallback: { type: 'string' },
    'fallback-max-age': { type: 'string' },
    'fallback-key-file': { type: 'string' },
  });
  if (options.help) {
    io.out(RUN_HELP);
    return EXIT.ok;
  }
  if (!options.ns?.length)
    throw new CliError('coffer run needs --ns NAMESPACE (coffer run --help)', EXIT.usage);
  if (command.length === 0)
    throw new CliError(
      'coffer run needs a command after --: coffer run --ns NAMESPACE -- COMMAND',
      EXIT.usage,
    );
  const file = options.fallback as string | undefined;
  if (file === undefined && (options['fallback-max-age'] || options['fallback-key-file']))
    throw new CliError(
      '--fallback-max-age and --fallback-key-file go with --fallback FILE',
      EXIT.usage,
    );
  const fallback: FallbackOptions | undefined =
    file === undefined
      ? undefined
      : {
          file,
          key: fallbackKey(options['fallback-key-file'] as string | undefined, io.env),
          maxAgeMs: parseDuration(
            (options['fallback-max-age'] as string | undefined) ?? '24h',
            '--fallback-max-age',
          ),
        };
  const coffer = connect(io.env);
  const values = await valuesWithFallback(coffer, options.ns, fallback, io.warn);
  let variables: Map<string, string>;
  try {
    variables = environmentOf(values, options);
  } catch (err) {
    if (err instanceof MappingError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  const env: NodeJS.ProcessEnv = { ...io.env };
  for (const name of WITHHELD) delete env[name];
  for (const [name, value] of variables) env[name] = value;
  return runChild(command, env);
}

/** Runs the command to its end, passing signals on; resolves with the exit code to exit with. */
function runChild(command: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { env, stdio: 'inherit' });
    const forward = (signal: NodeJS.Signals): void => {
      child.kill(signal);
    };
    for (const signal of FORWARDED) process.on(signal, forward);
    const stopForwarding = (): void => {
      for (const signal of FORWARDED) process.off(signal, forward);
    };
    child.on('error', (err: NodeJS.ErrnoException) => {
      stopForwarding();
      if (err.code === 'ENOENT')
        reject(new CliError(`${command[0]}: command not found`, EXIT.commandNotFound));
      else if (err.code === 'EACCES')
        reject(new CliError(`${command[0]}: permission denied`, EXIT.cannotExecute));
      else reject(new CliError(`${command[0]}: ${err.message}`, EXIT.cannotExecute));
    });
    child.on('exit', (code, signal) => {
      stopForwarding();
      if (signal !== null) {
        // Ended by a signal: end the same way, so whoever runs coffer sees what its child saw.
        process.kill(process.pid, signal);
        resolve(128 + (constants.signals[signal] ?? 0));
        return;
      }
      resolve(code ?? EXIT.failure);
    });
  });
}
