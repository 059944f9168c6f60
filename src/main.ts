#!/usr/bin/env node
/** The `coffer` command: parse argv, dispatch, set the exit code. */
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { argumentsError, CliError, EXIT } from './cli/exit-codes.js';
import { ConfigError } from './errors.js';
import { KeyProviderError } from './keys/key-provider.js';
import { versionText } from './version.js';

// Each command loads what it needs when it runs (import() below): `coffer run` starts an application, and
// its start-up should cost no more than the client it uses.

const USAGE = `usage: coffer <command> [options]     (coffer <command> --help for each)

  run         run a program with a namespace's values as its environment: coffer run --ns payments/prod -- node app.js
  export      write those variables to stdout as dotenv, json or shell
  kv          get, put, ls, rm and versions of keys
  token       create, ls and revoke tokens
  role        the runtime roles and login roles: ls, show, put, rm (coffer role login …)
  whoami      the token's identity and what it may do
  login       sign in through your identity provider (--oidc); logout revokes that sign-in
  serve       run the server; configured by COFFER_* variables and a COFFER_CONFIG file (coffer help settings).
              --accept-rollback: start even on a store put back from an older copy (audited; SECURITY.md)
  operator    key management against a running server: status, rotate, rewrap, migrate-key; snapshot and
              restore of the store's sealed records (coffer operator --help)
  audit       verify the audit log, report on sealed storage, offline (coffer audit --help)
  openapi     print the OpenAPI 3.1 document this server publishes at /v1/openapi.json, for generating a
              client without a running server
  help [operator|audit|settings|<command>], --version [--remote]

The people commands reach the server at COFFER_ADDR (default http://127.0.0.1:8750) with the token in
COFFER_TOKEN or in the file COFFER_TOKEN_FILE names (never an argument), or log in with the JWT in the file
COFFER_JWT_FILE names under the login role COFFER_LOGIN_ROLE, or else with the token \`coffer login --oidc\`
stored for that server. Exit codes: 0 done, 1 failed,
2 bad arguments or no token, 3 not found, 4 denied (401/403), 5 Coffer unreachable or unavailable,
6 check-and-set conflict (412); coffer run exits with its command's code.
`;

/** JSON lines for machines; on a terminal, the same lines made readable (pino-pretty). */
async function logger(level: string): Promise<Logger> {
  const { pino } = await import('pino');
  if (!process.stdout.isTTY) return pino({ level });
  return pino(
    { level },
    pino.transport({
      target: 'pino-pretty',
      options: { colorize: true, translateTime: 'SYS:standard', ignore: 'hostname' },
    }),
  );
}

/** The COFFER_* variables set that no setting reads, each with the closest real name. */
async function unknownSettings(): Promise<string[]> {
  const { ENV_SETTINGS } = await import('./config/load.js');
  const { unknownSettingWarnings } = await import('./config/unknown-env.js');
  return unknownSettingWarnings(
    process.env,
    ENV_SETTINGS.map((s) => s.env),
  );
}

const OPENAPI_HELP = `usage: coffer openapi

Prints the OpenAPI 3.1 document this server publishes at /v1/openapi.json (with its settings: COFFER_MAX_TTL
decides a bound it states), for generating a client without a running server.

examples:
  coffer openapi > coffer-openapi.json
  coffer openapi | jq '.paths | keys'
`;

async function serve(acceptRollback: boolean): Promise<void> {
  const { default: cluster } = await import('node:cluster');
  const { loadConfig } = await import('./config/load.js');
  const config = loadConfig();
  const log = await logger(config.log_level);
  if (cluster.isWorker) {
    const { runWorker } = await import('./server/worker.js');
    return runWorker(config, log);
  }
  const { runSupervisor } = await import('./server/supervisor.js');
  for (const warning of await unknownSettings())
    log.warn({ event: 'config.unknown_variable' }, warning);
  await runSupervisor(config, log, {
    acceptRollback,
    onGeneratedRootToken: (token) => {
      process.stderr.write(
        `\nA root token was generated. It is shown this once and never stored in clear:\n\n    ${token}\n\n` +
          'Keep it somewhere safe. To replace it later, restart with COFFER_ROOT_TOKEN set.\n\n',
      );
    },
  });
}

/**
 * A reader that stops reading (`coffer audit seal-report | head`) closes the pipe: the rest of the output
 * is dropped without a word, and the command finishes with its own exit code.
 */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    stream.write = (() => true) as typeof stream.write;
  });
}

/** The commands for people and applications: each loads only the client and its own module. */
const PEOPLE: Record<string, (args: string[]) => Promise<number>> = {
  run: async (args) => (await import('./cli/run.js')).runCommand(args),
  export: async (args) => (await import('./cli/export.js')).exportCommand(args),
  kv: async (args) => (await import('./cli/kv.js')).kvCommand(args),
  token: async (args) => (await import('./cli/tokens.js')).tokenCommand(args),
  whoami: async (args) => (await import('./cli/tokens.js')).whoamiCommand(args),
  role: async (args) => (await import('./cli/roles.js')).roleCommand(args),
  login: async (args) => (await import('./cli/login.js')).loginCommand(args),
  logout: async (args) => (await import('./cli/login.js')).logoutCommand(args),
};

async function main(argv: string[]): Promise<number | undefined> {
  quietOnClosedPipe(process.stdout);
  // Every file Coffer creates is 0600 and every directory 0700, whatever the umask it was started with
  // (LMDB, for one, creates its files with 0644 less the umask).
  process.umask(0o077);
  if (argv[0] === 'operator' || argv[0] === 'audit') {
    for (const warning of await unknownSettings())
      process.stderr.write(`coffer: warning: ${warning}\n`);
    if (argv[0] === 'operator') {
      const { operatorCommand } = await import('./cli/operator.js');
      return operatorCommand(argv.slice(1));
    }
    const { auditCommand } = await import('./cli/audit.js');
    return auditCommand(argv.slice(1));
  }
  const people = PEOPLE[argv[0] ?? ''];
  if (people) {
    // fetch parses HTTP with WebAssembly, which V8 also compiles a second time, optimized, in the
    // background, and a process that exits waits for that: about 130 ms of a one-call command (measured:
    // docs/performance.md). Baseline code alone is plenty for a command's few calls.
    (await import('node:v8')).setFlagsFromString('--liftoff-only');
    return people(argv.slice(1));
  }
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
      remote: { type: 'boolean' },
      'accept-rollback': { type: 'boolean' },
    },
  });
  const command = positionals[0];
  if (values.version || command === 'version') {
    process.stdout.write(`${versionText()}\n`);
    if (values.remote) {
      // The server's own build, which may differ from this command's (COFFER_ADDR, a token).
      const { serverVersion } = await import('./cli/server-version.js');
      process.stdout.write(`server: ${versionText(await serverVersion())}\n`);
    }
    return EXIT.ok;
  }
  if (values.remote) {
    process.stderr.write('coffer: --remote goes with --version\n');
    return EXIT.usage;
  }
  if (command === 'help' || (values.help && (command === undefined || command === 'serve'))) {
    // `coffer help operator` is `coffer operator --help`.
    if (positionals[1] === 'operator' || positionals[1] === 'audit')
      return main([positionals[1], '--help']);
    const people = PEOPLE[positionals[1] ?? ''];
    if (people) return people(['--help']);
    if (positionals[1] === 'settings' || (command === 'serve' && values.help)) {
      const { settingsHelp } = await import('./config/settings-table.js');
      process.stdout.write(settingsHelp());
      return EXIT.ok;
    }
    process.stdout.write(USAGE);
    return EXIT.ok;
  }
  if (values['accept-rollback'] && command !== 'serve') {
    process.stderr.write('coffer: --accept-rollback goes with serve\n');
    return EXIT.usage;
  }
  if (command === 'serve' && positionals.length === 1 && !values.help) {
    await serve(values['accept-rollback'] === true);
    return undefined;
  }
  if (command === 'openapi' && values.help) {
    process.stdout.write(OPENAPI_HELP);
    return EXIT.ok;
  }
  if (command === 'openapi' && positionals.length === 1 && !values.help) {
    // Loaded only here: no other command needs the features' declarations.
    const { documentText } = await import('./features.js');
    const { loadConfig } = await import('./config/load.js');
    process.stdout.write(documentText(loadConfig(process.env).max_ttl));
    return EXIT.ok;
  }
  // Bare `coffer` (or anything unknown) prints usage; only `coffer serve` starts a server.
  process.stderr.write(USAGE);
  return EXIT.usage;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code === undefined) return;
    // A command that went through the client is done: exit now rather than when fetch's idle keep-alive
    // connection lets the event loop end (about 150 ms later). Writes to stdout and stderr are synchronous
    // on Linux for files, pipes and terminals, so nothing written is lost.
    if (PEOPLE[process.argv[2] ?? ''] || process.argv[2] === 'operator') process.exit(code);
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof KeyProviderError) {
      // A ConfigError's message already starts with its setting.
      const line = err instanceof ConfigError ? err.message : `${err.setting}: ${err.message}`;
      process.stderr.write(`coffer: ${line}\n`);
      process.exit(EXIT.usage);
    }
    if (err instanceof CliError) {
      process.stderr.write(`coffer: ${err.message}\n`);
      process.exit(err.exitCode);
    }
    if (String((err as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS')) {
      const plain = argumentsError(err);
      process.stderr.write(`coffer: ${plain.message}\n`);
      process.exit(plain.exitCode);
    }
    const e = err as NodeJS.ErrnoException;
    const what = process.argv[2] === 'serve' ? 'start-up failed: ' : '';
    process.stderr.write(`coffer: ${what}${e.message ?? String(err)}\n`);
    process.exit(EXIT.failure);
  },
);
