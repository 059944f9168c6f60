/** Starts the servers the benchmarks measure: Coffer (any number of workers) and a bare Express 5 route. */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COLLECTOR_FLAGS } from '../src/server/collector-flags.js';
import { pinned } from './machine.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
export const COFFER_MAIN = join(HERE, '..', 'src', 'main.js');
const BARE_EXPRESS = join(HERE, 'bare-express.js');
const DIRECT = join(HERE, 'direct-server.js');

export interface RunningServer {
  readonly url: string;
  readonly child: ChildProcess;
  /** Milliseconds from spawn to "listening". */
  readonly startupMs: number;
  /** The processes serving requests (Coffer's workers, or the one process). */
  servingPids(): number[];
  stop(): Promise<void>;
}

function waitForListening(
  child: ChildProcess,
  pattern: RegExp,
  started: number,
): Promise<{ url: string; startupMs: number }> {
  let out = '';
  return new Promise((resolve, reject) => {
    const early = (code: number | null): void =>
      reject(new Error(`server exited with ${code}:\n${out}`));
    child.once('exit', early);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        child.off('exit', early);
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve({ url: m[1]!, startupMs: performance.now() - started });
      }
    });
  });
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
}

export interface CofferServerOptions {
  readonly dataDir: string;
  readonly rootToken: string;
  readonly workers: number;
  /** Pin the whole server to one core (for one-process runs); null leaves it free. */
  readonly core: number | null;
  /** More settings (COFFER_STORAGE=postgres, say), laid over the ones above. */
  readonly env?: Readonly<Record<string, string>>;
}

export async function startCoffer(options: CofferServerOptions): Promise<RunningServer> {
  const [cmd, args] = pinned(options.core, process.execPath, [COFFER_MAIN, 'serve']);
  const started = performance.now();
  const child = spawn(cmd, args, {
    env: {
      ...process.env,
      COFFER_PORT: '0',
      COFFER_WORKERS: String(options.workers),
      COFFER_DATA_DIR: join(options.dataDir, 'data'),
      COFFER_MASTER_KEY_FILE: join(options.dataDir, 'master.key'),
      COFFER_ROOT_TOKEN: options.rootToken,
      COFFER_LOG_LEVEL: 'info',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { url, startupMs } = await waitForListening(
    child,
    /"url":"([^"]+)"[^\n]*coffer listening/,
    started,
  );
  return {
    url,
    child,
    startupMs,
    servingPids: () => childPids(child.pid!),
    stop: stopper(child),
  };
}

/** Coffer as one process without a supervisor, with or without its audit log (bench/direct-server.ts). */
export interface DirectOptions extends Omit<CofferServerOptions, 'workers'> {
  readonly nodeArgs?: readonly string[];
  /** Another build's bench/direct-server.js (bench/against-commit.ts); default this build's. */
  readonly script?: string;
  /** More settings (COFFER_STORAGE=postgres, say), laid over the ones above. */
  readonly env?: Readonly<Record<string, string>>;
}

export async function startDirectCoffer(
  options: DirectOptions,
  audit: boolean,
): Promise<RunningServer> {
  const [cmd, args] = pinned(options.core, process.execPath, [
    // As a server's workers run (src/server/collector-flags.ts).
    ...COLLECTOR_FLAGS,
    ...(options.nodeArgs ?? []),
    options.script ?? DIRECT,
    audit ? 'audit' : 'no-audit',
  ]);
  const started = performance.now();
  const child = spawn(cmd, args, {
    env: {
      ...process.env,
      COFFER_PORT: '0',
      COFFER_DATA_DIR: join(options.dataDir, 'data'),
      COFFER_MASTER_KEY_FILE: join(options.dataDir, 'master.key'),
      COFFER_ROOT_TOKEN: options.rootToken,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { url, startupMs } = await waitForListening(child, /listening (\S+)/, started);
  return { url, child, startupMs, servingPids: () => [child.pid!], stop: stopper(child) };
}

export async function startBareExpress(core: number | null): Promise<RunningServer> {
  const [cmd, args] = pinned(core, process.execPath, [BARE_EXPRESS]);
  const started = performance.now();
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const { url, startupMs } = await waitForListening(child, /listening (\S+)/, started);
  return { url, child, startupMs, servingPids: () => [child.pid!], stop: stopper(child) };
}

/** The pids of `parent`'s child processes (a supervisor's workers). */
export function childPids(parent: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(parent)])
      .toString()
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** A memory figure of a process from /proc/<pid>/status, in MB: VmRSS (all resident) or RssAnon (private). */
export function residentMb(pid: number, field: 'VmRSS' | 'RssAnon' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return kb / 1024;
}
