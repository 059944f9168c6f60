#!/usr/bin/env node
/**
 * `coffer-run`: `coffer run` on its own, the command of the `@coffer/client` package (packages/client). An
 * application's image needs the client and this command, and nothing of the server: no store, no key
 * provider, no native dependency. The options and exit codes are `coffer run`'s (docs/cli.md).
 */
import { KeyProviderError } from '../keys/key-provider.js';
import { argumentsError, CliError } from './exit-codes.js';
import { printable } from './printable.js';
import { runCommand } from './run.js';

/** The one line a failure prints, and the exit code (as `coffer` says it: main.ts). */
function failure(err: unknown): { line: string; code: number } {
  if (err instanceof CliError) return { line: err.message, code: err.exitCode };
  if (err instanceof KeyProviderError) return { line: `${err.setting}: ${err.message}`, code: 2 };
  if (String((err as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS')) {
    const plain = argumentsError(err);
    return { line: plain.message, code: plain.exitCode };
  }
  return { line: (err as Error).message ?? String(err), code: 1 };
}

// Files the command writes (the fallback copy, a JWT login's cache) are the user's alone.
process.umask(0o077);
runCommand(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const { line, code } = failure(err);
    process.stderr.write(`coffer-run: ${printable(line)}\n`);
    process.exit(code);
  },
);
