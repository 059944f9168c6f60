#!/usr/bin/env node
/** The `coffer` command: parse argv, dispatch, set the exit code. */
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { type CommandIo, processIo } from './cli/command-io.js';
import { argumentsError, CliError, EXIT } from './cli/exit-codes.js';
import { printable } from './cli/printable.js';
import { noSuchCommand } from './cli/suggest.js';
import { ConfigError } from './errors.js';
import { KeyProviderError } from './keys/key-provider.js';
import { versionText } from './version.js';

// Each command loads what it needs when it runs (import() below): `coffer run` starts an application, and
// its start-up should cost no more than the client it uses.

/** What `coffer --help` says after the commands (docs/cli.md has the whole). */
const USAGE_END = `  help [operator|audit|settings|<command>], --version [--remote]

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

const SERVE_HELP = `usage: coffer serve [--accept-rollback]

Runs the server, configured by COFFER_* variables and a COFFER_CONFIG file: every setting follows.
--accept-rollback: start even on a store put back from an older copy (audited; SECURITY.md).

`;

/** `coffer serve`: runs until it is stopped (undefined: no exit code to set). */
async function serveCommand(args: string[], io: CommandIo): Promise<number | undefined> {
  const { values } = parseArgs({
    args,
    options: { help: { type: 'boolean', short: 'h' }, 'accept-rollback': { type: 'boolean' } },
  });
  if (values.help) {
    const { settingsHelp } = await import('./config/settings-table.js');
    io.write(`${SERVE_HELP}${settingsHelp()}`);
    return EXIT.ok;
  }
  const { default: cluster } = await import('node:cluster');
  const { loadConfig } = await import('./config/load.js');
  const config = loadConfig();
  const log = await logger(config.log_level);
  if (cluster.isWorker) {
    const { runWorker } = await import('./server/worker.js');
    await runWorker(config, log);
    return undefined;
  }
  const { runSupervisor } = await import('./server/supervisor.js');
  for (const warning of await unknownSettings())
    log.warn({ event: 'config.unknown_variable' }, warning);
  await runSupervisor(config, log, {
    acceptRollback: values['accept-rollback'] === true,
    onGeneratedRootToken: (token) => {
      io.tell(
        `\nA root token was generated. It is shown this once and never stored in clear:\n\n    ${token}\n\n` +
          'Keep it somewhere safe. To replace it later, restart with COFFER_ROOT_TOKEN set.\n\n',
      );
    },
  });
  return undefined;
}

/** `coffer openapi`: the document, built from the features' declarations (loaded only here). */
async function openapiCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    io.write(OPENAPI_HELP);
    return EXIT.ok;
  }
  const { documentText } = await import('./features.js');
  const { loadConfig } = await import('./config/load.js');
  io.write(documentText(loadConfig(io.env).max_ttl));
  return EXIT.ok;
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

interface Command {
  /** Its line in \`coffer --help\` (continued on further lines). */
  readonly summary: string;
  /**
   * A command for people and applications: it goes through the client, whose start-up it should not
   * outlast, and exits as soon as it is done.
   */
  readonly client?: true;
  /** It reads the server's settings: COFFER_* variables no setting reads are warned of first. */
  readonly settings?: true;
  /** Each command loads only its own module when it runs. undefined: it keeps running (serve). */
  readonly run: (args: string[], io: CommandIo) => Promise<number | undefined>;
}

/** Every command of \`coffer\`, in the order \`coffer --help\` lists them. */
const COMMANDS: Readonly<Record<string, Command>> = {
  run: {
    client: true,
    summary:
      "run a program with a namespace's values as its environment: coffer run --ns payments/prod -- node app.js",
    run: async (args, io) => (await import('./cli/run.js')).runCommand(args, io),
  },
  export: {
    client: true,
    summary: 'write those variables to stdout as dotenv, json or shell',
    run: async (args, io) => (await import('./cli/export.js')).exportCommand(args, io),
  },
  kv: {
    client: true,
    summary:
      'get, put, ls, rm (to the trash), undelete, destroy, rollback, trash and versions of keys',
    run: async (args, io) => (await import('./cli/kv.js')).kvCommand(args, io),
  },
  events: {
    client: true,
    summary: 'tail: every change the token may read, as it is committed (never a value)',
    run: async (args, io) => (await import('./cli/events.js')).eventsCommand(args, io),
  },
  webhook: {
    client: true,
    summary: 'ls, show, put, rm, test: signed webhooks for the change events',
    run: async (args, io) => (await import('./cli/webhooks.js')).webhookCommand(args, io),
  },
  import: {
    client: true,
    summary:
      'copy a Vault or OpenBao KV v2 export into Coffer, every version, checked after copying',
    run: async (args, io) => (await import('./cli/import-vault.js')).importCommand(args, io),
  },
  token: {
    client: true,
    summary: 'create, ls and revoke tokens; revoke-self and renew the token in use',
    run: async (args, io) => (await import('./cli/tokens.js')).tokenCommand(args, io),
  },
  role: {
    client: true,
    summary: 'the runtime roles and login roles: ls, show, put, rm (coffer role login …)',
    run: async (args, io) => (await import('./cli/roles.js')).roleCommand(args, io),
  },
  whoami: {
    client: true,
    summary: "the token's identity and what it may do",
    run: async (args, io) => (await import('./cli/tokens.js')).whoamiCommand(args, io),
  },
  login: {
    client: true,
    summary: 'sign in through your identity provider (--oidc)',
    run: async (args, io) => (await import('./cli/login.js')).loginCommand(args, io),
  },
  logout: {
    client: true,
    summary: 'revoke the sign-in coffer login stored, and forget it',
    run: async (args, io) => (await import('./cli/login.js')).logoutCommand(args, io),
  },
  serve: {
    summary:
      'run the server; configured by COFFER_* variables and a COFFER_CONFIG file (coffer help settings).\n--accept-rollback: start even on a store put back from an older copy (audited; SECURITY.md)',
    run: serveCommand,
  },
  operator: {
    settings: true,
    summary:
      "key management against a running server: status, rotate, rewrap, migrate-key; snapshot and\nrestore of the store's sealed records (coffer operator --help)",
    run: async (args, io) => (await import('./cli/operator.js')).operatorCommand(args, io),
  },
  audit: {
    settings: true,
    summary: 'verify the audit log, report on sealed storage, offline (coffer audit --help)',
    run: async (args, io) => (await import('./cli/audit.js')).auditCommand(args, io),
  },
  openapi: {
    summary:
      'print the OpenAPI 3.1 document this server publishes at /v1/openapi.json, for generating a\nclient without a running server',
    run: openapiCommand,
  },
};

/** \`coffer --help\`: the commands of the table, each with its summary, then the rest. */
function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) =>
    summary
      .split('\n')
      .map((line, i) => `  ${(i === 0 ? name : '').padEnd(12)}${line}`)
      .join('\n'),
  );
  return `usage: coffer <command> [options]     (coffer <command> --help for each)\n\n${lines.join('\n')}\n${USAGE_END}`;
}

async function main(argv: string[], io: CommandIo): Promise<number | undefined> {
  quietOnClosedPipe(process.stdout);
  // Every file Coffer creates is 0600 and every directory 0700, whatever the umask it was started with
  // (LMDB, for one, creates its files with 0644 less the umask).
  process.umask(0o077);
  const command = COMMANDS[argv[0] ?? ''];
  if (command) {
    if (command.settings)
      for (const warning of await unknownSettings()) io.tell(`coffer: warning: ${warning}\n`);
    if (command.client)
      // fetch parses HTTP with WebAssembly, which V8 also compiles a second time, optimized, in the
      // background, and a process that exits waits for that: about 130 ms of a one-call command
      // (measured: docs/performance.md). Baseline code alone is plenty for a command's few calls.
      (await import('node:v8')).setFlagsFromString('--liftoff-only');
    return command.run(argv.slice(1), io);
  }
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
      remote: { type: 'boolean' },
    },
  });
  if (values.version || positionals[0] === 'version') {
    io.write(`${versionText()}\n`);
    if (values.remote) {
      // The server's own build, which may differ from this command's (COFFER_ADDR, a token).
      const { serverVersion } = await import('./cli/server-version.js');
      io.write(`server: ${versionText(await serverVersion())}\n`);
    }
    return EXIT.ok;
  }
  if (values.remote) {
    io.tell('coffer: --remote goes with --version\n');
    return EXIT.usage;
  }
  if (positionals[0] === 'help' || (values.help && positionals.length === 0)) {
    // \`coffer help operator\` is \`coffer operator --help\`; \`coffer help settings\` is \`coffer serve --help\`.
    const topic = positionals[1] === 'settings' ? 'serve' : (positionals[1] ?? '');
    if (COMMANDS[topic]) return main([topic, '--help'], io);
    io.write(usage());
    return EXIT.ok;
  }
  // Bare \`coffer\` prints usage; a word it does not know says so, with the nearest command. Only
  // \`coffer serve\` starts a server.
  if (positionals[0] !== undefined)
    throw noSuchCommand('', positionals[0], [...Object.keys(COMMANDS), 'help', 'version']);
  io.tell(usage());
  return EXIT.usage;
}

main(process.argv.slice(2), processIo()).then(
  (code) => {
    if (code === undefined) return;
    // A command that went through the client is done: exit now rather than when fetch's idle keep-alive
    // connection lets the event loop end (about 150 ms later). Writes to stdout and stderr are synchronous
    // on Linux for files, pipes and terminals, so nothing written is lost.
    const command = COMMANDS[process.argv[2] ?? ''];
    if (command?.client || process.argv[2] === 'operator') process.exit(code);
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
      // Its line may hold what the server said, which may quote what someone else wrote.
      process.stderr.write(`coffer: ${printable(err.message)}\n`);
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
