/**
 * Where every command reads and writes: one shape for every command of the table (cli/commands.ts), which
 * runs each with the process's own (`processIo`). Node's built-ins only: `coffer-run` (the client package)
 * uses it too.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { printable } from './printable.js';

export interface CommandIo {
  /** The variables the command reads (COFFER_ADDR, COFFER_TOKEN, …). */
  readonly env: NodeJS.ProcessEnv;
  /** The command's answer, as given: standard output. */
  readonly write: (text: string) => void;
  /** What the command tells the person, as given: standard error. */
  readonly tell: (text: string) => void;
  /** Whether standard output is a terminal (a value is not printed to one without a newline, say). */
  readonly tty: boolean;
  /** Standard input, whole. */
  readonly stdin: () => Promise<Buffer>;
  /** A file's text, or standard input's for "-". */
  readonly read: (file: string) => string;
  /** Opens `url` in the person's browser; false when none could be started. */
  readonly openBrowser: (url: string) => boolean;
  /** Where a progress bar goes when it is a terminal: standard error. */
  readonly progress: NodeJS.WriteStream;
}

/** A line-at-a-time writer (each line gets its newline). */
export type Out = (line: string) => void;

/**
 * Text for people a line at a time (reports, verdicts, warnings), each shown printable: what it quotes from
 * the store, the server or an audit file cannot act on the terminal (printable.ts).
 */
export const linesTo =
  (io: Pick<CommandIo, 'write'>): Out =>
  (line) =>
    io.write(`${line.split('\n').map(printable).join('\n')}\n`);

/** The process's own standard streams, variables and browser. */
export function processIo(): CommandIo {
  return {
    env: process.env,
    write: (text) => process.stdout.write(text),
    tell: (text) => process.stderr.write(text),
    tty: process.stdout.isTTY === true,
    stdin: readStdin,
    read: (file) => readFileSync(file === '-' ? 0 : file, 'utf8'),
    openBrowser,
    progress: process.stderr,
  };
}

async function readStdin(): Promise<Buffer> {
  // Typed at a terminal, the input ends only at Ctrl-D: said, or the command seems to hang.
  if (process.stdin.isTTY)
    process.stderr.write(
      'coffer: reading standard input: type it (it shows as you type), then Ctrl-D; a line break typed is part of it\n',
    );
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The platform's way to open an address; never through a shell. */
function openBrowser(url: string): boolean {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['rundll32', ['url.dll,FileProtocolHandler', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
    return true;
  } catch {
    return false;
  }
}
