/** Runs the real `coffer` command (dist/src/main.js) as a child process, for start-up tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childPids } from '../../bench/servers.js';
import { generateToken } from '../../src/auth/token-format.js';
import { processRuns } from '../../src/processes.js';
import { eventually } from './eventually.js';
import { runDirectory, tempDir } from './temp-dirs.js';

export const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export interface CofferProcess {
  readonly child: ChildProcess;
  readonly url: string;
  stdout(): string;
  stderr(): string;
  stop(): Promise<number | null>;
}

/**
 * The settings of a `coffer serve` in a new temporary directory (store, key file) with a random root token
 * and `workers` server processes; `extra` adds settings.
 */
export function serveSettings(
  workers: number,
  extra: Record<string, string> = {},
): {
  dir: string;
  root: string;
  env: Record<string, string> & { COFFER_DATA_DIR: string; COFFER_MASTER_KEY_FILE: string };
} {
  const dir = tempDir();
  const root = generateToken().value;
  const env = {
    COFFER_DATA_DIR: join(dir, 'data'),
    COFFER_MASTER_KEY_FILE: join(dir, 'master.key'),
    COFFER_ROOT_TOKEN: root,
    COFFER_WORKERS: String(workers),
    ...extra,
  };
  return { dir, root, env };
}

export interface Exited {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Children still running when the test process exits (a failed test that never stopped its server) are killed. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** `coffer args…` run as dist/src/main.js, or as the executable `bin` (an installed `coffer`). */
function spawnCoffer(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
  bin?: string,
): ChildProcess & {
  stdout: NonNullable<ChildProcess['stdout']>;
  stderr: NonNullable<ChildProcess['stderr']>;
} {
  const child = spawn(bin ?? process.execPath, bin ? args : [MAIN, ...args], {
    env,
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child as ReturnType<typeof spawnCoffer>;
}

function baseEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('COFFER_')),
  );
  return { ...clean, COFFER_PORT: '0', ...env };
}

/** Starts coffer (or the installed `bin`) and resolves once it logs that it is listening. */
export function startProcess(
  env: Record<string, string>,
  cwd?: string,
  bin?: string,
): Promise<CofferProcess> {
  const child = spawnCoffer(['serve'], baseEnv(env), cwd, bin);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    // Generous: a first start makes a keyring and hashes a root token, and under the parallel suite on two
    // cores that has taken over 15 s; a start that comes sooner costs no waiting.
    const timer = setTimeout(
      () => reject(new Error(`coffer did not start within 40 s: ${withoutTokens(err)}`)),
      40_000,
    );
    const early = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`coffer exited with ${code}: ${withoutTokens(err)}`));
    };
    child.once('exit', early);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /"url":"([^"]+)"[^\n]*coffer listening/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.off('exit', early);
        resolve({
          child,
          url: match[1]!,
          stdout: () => out,
          stderr: () => err,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null || child.signalCode !== null) {
                done(child.exitCode);
                return;
              }
              child.once('exit', (code) => done(code));
              child.kill('SIGTERM');
            }),
        });
      }
    });
  });
}

/** The pids of a supervisor's worker processes (the benchmarks' helper, one copy). */
export const workerPids = childPids;

/**
 * SIGKILLs the supervisor and its workers at once, as `kill -9` of the process group would, and waits for
 * every one of them to be gone: a worker still exiting is still alive to whoever asks (a lease's owner, a
 * run's), and the supervisor's exit does not wait for it (CI at edec6e9: a rewrap handed over too soon was
 * refused as still held).
 */
export async function killAll(p: CofferProcess): Promise<void> {
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  const pids = [p.child.pid!, ...workerPids(p.child.pid!)];
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  await exited;
  await eventually(() => pids.every((pid) => !processRuns(pid)), {
    timeout: 10_000,
    interval: 10,
    what: 'every killed process gone',
  });
}

/** Runs coffer expecting it to exit on its own (a refused start-up). */
export function runToExit(env: Record<string, string>, timeoutMs = 15_000): Promise<Exited> {
  const child = spawnCoffer(['serve'], baseEnv(env));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('coffer did not exit'));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a `coffer` subcommand (operator, audit, …) to completion with exactly the COFFER_* settings given. */
export function runCoffer(
  args: string[],
  env: Record<string, string>,
  cwd?: string,
): Promise<Exited> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('COFFER_')),
  );
  const child = spawnCoffer(args, { ...clean, ...env }, cwd);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A server's stderr for a failure message, without the root token it may have printed once. */
function withoutTokens(text: string): string {
  return text.replace(/cfr_[A-Za-z0-9_]+/g, 'cfr_…');
}

/** A configuration directory that does not exist, in the run's directory (a command may still make it). */
const noConfig = (): string => join(runDirectory(), 'no-config');

/** A `coffer` command under way: its process, and its end with all it wrote. */
export interface RunningCommand {
  readonly child: ChildProcess;
  /** What it has written to stdout so far. */
  stdout(): string;
  /** What it has written to stderr so far. */
  stderr(): string;
  readonly done: Promise<Exited & { readonly signal: NodeJS.Signals | null }>;
}

/**
 * Starts a `coffer` command (run, kv, …) with exactly the COFFER_* settings given and `input` on its stdin
 * (closed at once when there is none).
 */
export function startCommand(
  args: string[],
  env: Record<string, string>,
  input?: string | Buffer,
): RunningCommand {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('COFFER_')),
  );
  const child = spawn(process.execPath, [MAIN, ...args], {
    // No one's own stored sign-in (~/.config/coffer) reaches a test's command unless the test puts one.
    env: { ...clean, XDG_CONFIG_HOME: noConfig(), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  child.stdin.end(input);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    done: new Promise((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
    ),
  };
}

/** Runs a `coffer` command to its end (see startCommand). */
export function command(
  args: string[],
  env: Record<string, string>,
  input?: string | Buffer,
): Promise<Exited & { readonly signal: NodeJS.Signals | null }> {
  return startCommand(args, env, input).done;
}
