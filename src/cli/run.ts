/**
 * `coffer run --ns NAMESPACE [--ns …] [options] -- COMMAND [ARGS…]`: fetches every value the token may read
 * in the namespaces, maps them to environment variables (cli/env-names.ts) and runs COMMAND with them:
 * its stdin, stdout and stderr are this process's, every signal this process receives is passed on to it,
 * and its exit code (or the signal that ended it) becomes this process's. The values go to the child's
 * environment only: never a file in plaintext, never a command line. The child does not inherit
 * COFFER_TOKEN, COFFER_TOKEN_FILE or COFFER_FALLBACK_KEY.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import type { Coffer } from '../client/coffer.js';
import { type CommandIo, linesTo, processIo } from './command-io.js';
import { environmentOf, MappingError, type SourceValue } from './env-names.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { durationOption, fallbackKey, writeFallback } from './fallback.js';
import { connect, explain } from './session.js';
import { type FallbackOptions, requireValues, valuesWithFallback } from './values-source.js';

export const RUN_HELP = `usage: coffer run --ns NAMESPACE [--ns …] [options] -- COMMAND [ARGS…]

Runs COMMAND with every value the token may read directly in the namespaces as environment variables.
A key's variable is its name in upper case with . and - made _ (db_password → DB_PASSWORD); two keys
that come to one variable, or a key that gives no valid name, is an error naming them.

  --ns NAMESPACE            a namespace to read (repeatable; later ones do not override earlier ones)
  --prefix PREFIX           put PREFIX before every variable's name (APP_ → APP_DB_PASSWORD)
  --only KEY                keep only this key (repeatable; NAMESPACE/KEY for one namespace's)
  --map KEY=VAR             name KEY's variable VAR (repeatable; NAMESPACE/KEY=VAR for one namespace's)
  --allow-var VAR           let a value whose writer could not read the whole namespace set VAR, the
                            name the rule gives it (repeatable); without it such a value is refused
  --allow-empty             run even when a namespace gives no value (otherwise exit 3: not found, a typo?)
  --fallback FILE           keep an encrypted copy of the values in FILE (0600, written atomically), and
                            start from it when Coffer cannot be reached, saying so on stderr
  --fallback-max-age AGE    refuse a copy older than AGE (default 24h; 90s, 30m, 24h, 7d)
  --fallback-key-file FILE  the copy's key: 32 random bytes (or COFFER_FALLBACK_KEY, hex or base64)
  --watch                   when a value the command was given changes (or a key is added or deleted),
                            restart it: SIGTERM, up to 10 s to exit, then the new values. All namespaces
                            are followed on one connection (the change stream); a change that leaves the
                            command's variables as they were restarts nothing. Coffer out of reach never
                            stops the command; the watch tries again. The token is renewed before it
                            expires, up to its maximum lifetime
  --watch-signal SIGNAL     with --watch: send SIGNAL (HUP, USR1, …) instead of restarting (the command's
                            environment cannot change while it runs: for programs that read Coffer again)

  --jwt-file FILE           no token handed over: log in with the JWT in FILE (a Kubernetes service-account
                            token, a CI job's OIDC token; read again at each login, as the platform
                            rotates it) under the login role given by
  --login-role NAME         (also COFFER_JWT_FILE and COFFER_LOGIN_ROLE); logged in again before the token
                            expires or when it is refused (docs/identity.md)

The token comes from COFFER_TOKEN or COFFER_TOKEN_FILE, the server from COFFER_ADDR. The exit code is
COMMAND's; before it starts: 2 bad arguments or no token, 3 a namespace not found or giving no value, 4 denied,
5 Coffer unreachable (and no usable fallback copy), 126/127 COMMAND not executable / not found.

examples:
  coffer run --ns payments/prod -- node server.js
  coffer run --ns payments/prod --ns shared/prod --prefix APP_ -- ./start.sh
  coffer run --ns payments/prod --only db_password --map db_password=PGPASSWORD -- psql
  coffer run --ns payments/prod --watch -- node server.js
  coffer run --ns payments/prod --fallback /var/lib/app/coffer.fallback \\
      --fallback-key-file /etc/app/fallback.key --fallback-max-age 24h -- node server.js
`;

/** Variables the child never inherits: they would let it read more than it was given. */
const WITHHELD = [
  'COFFER_TOKEN',
  'COFFER_TOKEN_FILE',
  'COFFER_JWT_FILE',
  'COFFER_LOGIN_ROLE',
  'COFFER_FALLBACK_KEY',
];

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
  const options = {
    ns: { type: 'string', multiple: true },
    prefix: { type: 'string' },
    only: { type: 'string', multiple: true },
    map: { type: 'string', multiple: true },
    'allow-var': { type: 'string', multiple: true },
    'allow-empty': { type: 'boolean' },
    'jwt-file': { type: 'string' },
    'login-role': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
    ...extra,
  } as const;
  try {
    return parseArgs({ args, allowPositionals: false, options }).values as {
      ns?: string[];
      prefix?: string;
      only?: string[];
      map?: string[];
      'allow-var'?: string[];
      'allow-empty'?: boolean;
      'jwt-file'?: string;
      'login-role'?: string;
      help?: boolean;
      [more: string]: unknown;
    };
  } catch (err) {
    throw argumentsError(err);
  }
}

/**
 * The environment the client is made from: --jwt-file and --login-role stand for COFFER_JWT_FILE and
 * COFFER_LOGIN_ROLE (a JWT login instead of a token handed over), the one without the other an error.
 */
export function loginEnvironment(
  options: { 'jwt-file'?: string; 'login-role'?: string },
  env: NodeJS.ProcessEnv,
): NodeJS.ProcessEnv {
  const file = options['jwt-file'];
  const role = options['login-role'];
  if (file === undefined && role === undefined) return env;
  if (file === undefined || role === undefined)
    throw new CliError('--jwt-file and --login-role go together', EXIT.usage);
  if (env.COFFER_TOKEN || env.COFFER_TOKEN_FILE)
    throw new CliError(
      '--jwt-file logs in instead of a token: unset COFFER_TOKEN and COFFER_TOKEN_FILE',
      EXIT.usage,
    );
  return { ...env, COFFER_JWT_FILE: file, COFFER_LOGIN_ROLE: role };
}

export async function runCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  const { own, command } = splitCommand(args);
  const options = parseValueOptions(own, {
    fallback: { type: 'string' },
    'fallback-max-age': { type: 'string' },
    'fallback-key-file': { type: 'string' },
    watch: { type: 'boolean' },
    'watch-signal': { type: 'string' },
  });
  if (options.help) {
    linesTo(io)(RUN_HELP);
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
  if (options['watch-signal'] !== undefined && !options.watch)
    throw new CliError('--watch-signal goes with --watch', EXIT.usage);
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
          maxAgeMs: durationOption(
            (options['fallback-max-age'] as string | undefined) ?? '24h',
            '--fallback-max-age',
          ),
        };
  const coffer = connect(loginEnvironment(options, io.env));
  const values = await valuesWithFallback(
    coffer,
    options.ns,
    fallback,
    linesTo({ write: io.tell }),
  );
  requireValues(values, options.ns, options['allow-empty'] === true);
  try {
    environmentOf(values, options);
  } catch (err) {
    if (err instanceof MappingError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  const environment = (from: SourceValue[]): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...io.env };
    for (const name of WITHHELD) delete env[name];
    for (const [name, value] of environmentOf(from, options)) env[name] = value;
    return env;
  };
  const env = environment(values);
  if (!options.watch) return runChild(command, env);
  return runChild(command, env, {
    coffer,
    namespaces: options.ns,
    environment,
    signal: watchSignal(options['watch-signal'] as string | undefined),
    fallback,
    warn: linesTo({ write: io.tell }),
  });
}

function watchSignal(name: string | undefined): NodeJS.Signals | undefined {
  if (name === undefined) return undefined;
  const signal = (name.startsWith('SIG') ? name : `SIG${name}`).toUpperCase();
  if (!(signal in constants.signals) || signal === 'SIGKILL' || signal === 'SIGSTOP')
    throw new CliError(`--watch-signal ${name}: a signal such as HUP or USR1`, EXIT.usage);
  return signal as NodeJS.Signals;
}

/** What `--watch` needs: where to watch, how to make the environment, and what to do on a change. */
interface Watching {
  readonly coffer: Coffer;
  readonly namespaces: readonly string[];
  readonly environment: (values: SourceValue[]) => NodeJS.ProcessEnv;
  /** Sent to the command on a change; undefined: restart it. */
  readonly signal: NodeJS.Signals | undefined;
  readonly fallback: FallbackOptions | undefined;
  readonly warn: (line: string) => void;
}

/** How long a stopped command may take to exit on SIGTERM before a restart kills it. */
const RESTART_GRACE_MS = 10_000;

/**
 * Runs the command to its end, passing signals on; with `watching`, restarts it (or sends it the chosen
 * signal) when the values it was given change. Resolves with the exit code to exit with.
 */
async function runChild(
  command: string[],
  env: NodeJS.ProcessEnv,
  watching?: Watching,
): Promise<number> {
  let child = start(command, env);
  const forward = (signal: NodeJS.Signals): void => {
    child.process.kill(signal);
  };
  for (const signal of FORWARDED) process.on(signal, forward);
  const stopWatching = new AbortController();
  let restarting: Promise<void> | undefined;
  // While it watches, its token is renewed before it expires (up to its maximum lifetime).
  if (watching)
    watching.coffer.keepRenewed({ signal: stopWatching.signal }).catch((err: unknown) => {
      if (!stopWatching.signal.aborted)
        watching.warn(
          `coffer: renewing the token: ${(explain(err, watching.coffer, 'token') as Error).message}`,
        );
    });
  if (watching)
    void watchValues(watching, env, stopWatching.signal, async (next) => {
      if (watching.signal) {
        child.process.kill(watching.signal);
        return;
      }
      watching.warn('coffer: the values changed; restarting the command');
      restarting = (async () => {
        const old = child;
        old.process.kill('SIGTERM');
        const killer = setTimeout(() => old.process.kill('SIGKILL'), RESTART_GRACE_MS);
        await old.ended;
        clearTimeout(killer);
        child = start(command, next);
      })();
      await restarting;
      restarting = undefined;
    });
  try {
    for (;;) {
      const current = child;
      const ended = await current.ended;
      if (restarting !== undefined || child !== current) {
        await restarting;
        continue; // stopped for a restart: wait for the new one
      }
      if (ended.signal !== null) {
        for (const signal of FORWARDED) process.off(signal, forward);
        // Ended by a signal: end the same way, so whoever runs coffer sees what its child saw.
        process.kill(process.pid, ended.signal);
        return 128 + (constants.signals[ended.signal] ?? 0);
      }
      return ended.code ?? EXIT.failure;
    }
  } finally {
    stopWatching.abort();
    for (const signal of FORWARDED) process.off(signal, forward);
  }
}

interface Started {
  readonly process: ChildProcess;
  readonly ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(command: string[], env: NodeJS.ProcessEnv): Started {
  let child: ChildProcess;
  try {
    child = spawn(command[0]!, command.slice(1), { env, stdio: 'inherit' });
  } catch (err) {
    // Node's message for a refused argument quotes it, and the environment's are values: never shown.
    throw new CliError(
      `${command[0]}: cannot be started (${(err as NodeJS.ErrnoException).code ?? 'refused'})`,
      EXIT.cannotExecute,
    );
  }
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT')
          reject(new CliError(`${command[0]}: command not found`, EXIT.commandNotFound));
        else if (err.code === 'EACCES')
          reject(new CliError(`${command[0]}: permission denied`, EXIT.cannotExecute));
        else reject(new CliError(`${command[0]}: ${err.message}`, EXIT.cannotExecute));
      });
      child.on('exit', (code, signal) => resolve({ code, signal }));
    },
  );
  return { process: child, ended };
}

/**
 * Follows the namespaces' values on one change stream (the client's watchNamespaces: each namespace read
 * again after a change in it) and calls `changed` with the new environment when it differs from the last.
 * Coffer out of reach only delays it: the command goes on running, and the watch tries again (up to every
 * 30 s), saying so on stderr.
 */
async function watchValues(
  watching: Watching,
  first: NodeJS.ProcessEnv,
  signal: AbortSignal,
  changed: (env: NodeJS.ProcessEnv) => Promise<void>,
): Promise<void> {
  let current = JSON.stringify(first);
  let delay = 1000;
  while (!signal.aborted) {
    try {
      for await (const latest of watching.coffer.watchNamespaces(watching.namespaces, { signal })) {
        delay = 1000;
        const all: SourceValue[] = watching.namespaces.flatMap((namespace) =>
          (latest.get(namespace) ?? []).map((v) => ({
            namespace,
            key: v.key,
            value: v.value,
            writerReadsAll: v.writer_reads_all,
          })),
        );
        let next: NodeJS.ProcessEnv;
        try {
          next = watching.environment(all);
        } catch (err) {
          watching.warn(
            `coffer: the values changed, but ${(err as Error).message}; the command keeps the values it has`,
          );
          continue;
        }
        const text = JSON.stringify(next);
        if (text === current) continue;
        current = text;
        if (watching.fallback)
          await writeFallback(
            watching.fallback.file,
            watching.fallback.key,
            watching.coffer.url,
            watching.namespaces,
            all,
          );
        await changed(next);
      }
    } catch (err) {
      if (signal.aborted) return;
      watching.warn(
        `coffer: watching ${watching.namespaces.join(', ')}: ${(explain(err, watching.coffer, watching.namespaces.join(', ')) as Error).message}; trying again in ${delay / 1000}s`,
      );
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      delay = Math.min(30_000, delay * 2);
    }
  }
}
