#!/usr/bin/env node
/** The `coffer` command: parse argv, dispatch, set the exit code. */
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { type Logger, pino } from 'pino';
import { auditCommand } from './cli/audit.js';
import { CliError } from './cli/client.js';
import { operatorCommand } from './cli/operator.js';
import { ENV_SETTINGS, loadConfig } from './config/load.js';
import { settingsHelp } from './config/settings-table.js';
import { unknownSettingWarnings } from './config/unknown-env.js';
import { ConfigError } from './errors.js';
import { KeyProviderError } from './keys/key-provider.js';
import { runSupervisor } from './server/supervisor.js';
import { runWorker } from './server/worker.js';
import { versionText } from './version.js';

const USAGE = `usage: coffer serve | coffer operator <command> | coffer audit <command> | coffer openapi | coffer help [operator|audit|settings] | coffer --version

  serve       run the server; configured by COFFER_* variables and a COFFER_CONFIG file (coffer help settings)
  operator    key management against a running server: status, rotate, rewrap, migrate-key; snapshot and
              restore of the store's sealed records (coffer operator --help)
  audit       verify the audit log, report on sealed storage, offline (coffer audit --help)
  openapi     print the OpenAPI 3.1 document this server publishes at /v1/openapi.json, for generating a
              client without a running server
`;

/** JSON lines for machines; on a terminal, the same lines made readable (pino-pretty). */
function logger(level: string): Logger {
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
const unknownSettings = (): string[] =>
  unknownSettingWarnings(
    process.env,
    ENV_SETTINGS.map((s) => s.env),
  );

async function serve(): Promise<void> {
  const config = loadConfig();
  const log = logger(config.log_level);
  if (cluster.isWorker) return runWorker(config, log);
  for (const warning of unknownSettings()) log.warn({ event: 'config.unknown_variable' }, warning);
  await runSupervisor(config, log, {
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

async function main(argv: string[]): Promise<number | undefined> {
  quietOnClosedPipe(process.stdout);
  // Every file Coffer creates is 0600 and every directory 0700, whatever the umask it was started with
  // (LMDB, for one, creates its files with 0644 less the umask).
  process.umask(0o077);
  if (argv[0] === 'operator' || argv[0] === 'audit') {
    for (const warning of unknownSettings()) process.stderr.write(`coffer: warning: ${warning}\n`);
    return argv[0] === 'operator' ? operatorCommand(argv.slice(1)) : auditCommand(argv.slice(1));
  }
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
  });
  const command = positionals[0];
  if (values.version || command === 'version') {
    process.stdout.write(`${versionText()}\n`);
    return 0;
  }
  if (command === 'help' || (values.help && (command === undefined || command === 'serve'))) {
    // `coffer help operator` is `coffer operator --help`.
    if (positionals[1] === 'operator') return operatorCommand(['--help']);
    if (positionals[1] === 'audit') return auditCommand(['--help']);
    if (positionals[1] === 'settings' || (command === 'serve' && values.help)) {
      process.stdout.write(settingsHelp());
      return 0;
    }
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === 'serve' && positionals.length === 1 && !values.help) {
    await serve();
    return undefined;
  }
  if (command === 'openapi' && positionals.length === 1 && !values.help) {
    // Loaded only here: no other command needs the route table.
    const { documentText } = await import('./http/api-document.js');
    process.stdout.write(documentText(loadConfig(process.env).max_ttl));
    return 0;
  }
  // Bare `coffer` (or anything unknown) prints usage; only `coffer serve` starts a server.
  process.stderr.write(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof KeyProviderError) {
      // A ConfigError's message already starts with its setting.
      const line = err instanceof ConfigError ? err.message : `${err.setting}: ${err.message}`;
      process.stderr.write(`coffer: ${line}\n`);
      process.exit(2);
    }
    if (err instanceof CliError) {
      process.stderr.write(`coffer: ${err.message}\n`);
      process.exit(err.exitCode);
    }
    const e = err as NodeJS.ErrnoException;
    const what = process.argv[2] === 'serve' ? 'start-up failed: ' : '';
    process.stderr.write(`coffer: ${what}${e.message ?? String(err)}\n`);
    process.exit(1);
  },
);
