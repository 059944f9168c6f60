/**
 * Drives one load case with wrk (Debian's `wrk` package; installed on demand by ensureTools). A generated
 * Lua script shapes the requests and prints one JSON summary line, which this module parses.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinned } from './machine.js';

export interface LoadCase {
  readonly url: string;
  /** Lua code defining `request = function() ... end` (see the helpers below). */
  readonly lua: string;
  readonly connections: number;
  readonly seconds: number;
  /** Pin wrk to this core (when the machine allows it). */
  readonly core?: number;
}

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  /** Responses with a status of 400 or more. */
  readonly failedStatus: number;
  readonly requests: number;
}

const SUMMARY = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"errors":%d,"status":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
`;

/** Lua helpers every script gets: a request counter and base64 (for etcd's JSON API). */
const PRELUDE = `
counter = 0
local b64chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
function base64(data)
  return ((data:gsub('.', function(x)
    local r, b = '', x:byte()
    for i = 8, 1, -1 do r = r .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and '1' or '0') end
    return r
  end) .. '0000'):gsub('%d%d%d?%d?%d?%d?', function(x)
    if #x < 6 then return '' end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == '1' and 2 ^ (6 - i) or 0) end
    return b64chars:sub(c + 1, c + 1)
  end) .. ({ '', '==', '=' })[#data % 3 + 1])
end
`;

/** A Lua string literal. */
export const lua = (text: string): string => JSON.stringify(text);

export async function runWrk(load: LoadCase): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'coffer-wrk-'));
  const script = join(dir, 'case.lua');
  writeFileSync(script, PRELUDE + load.lua + SUMMARY);
  try {
    const [cmd, args] = pinned(load.core ?? 1, 'wrk', [
      '-t1',
      `-c${load.connections}`,
      `-d${load.seconds}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      load.url,
    ]);
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      // 'close', not 'exit': the exit may be heard before its output was all read.
      child.once('close', (code) =>
        code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}`)),
      );
    });
    const line = /WRK_JSON (\{.*\})/.exec(out);
    if (!line) throw new Error(`wrk printed no summary:\n${out}`);
    const s = JSON.parse(line[1]!) as {
      requests: number;
      duration_us: number;
      errors: number;
      status: number;
      p50_us: number;
      p99_us: number;
    };
    return {
      requestsPerSecond: s.requests / (s.duration_us / 1e6),
      p50Ms: s.p50_us / 1000,
      p99Ms: s.p99_us / 1000,
      errors: s.errors,
      failedStatus: s.status,
      requests: s.requests,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Installs Debian packages that provide `commands` when any is missing (the bench machine is ours). */
export function ensureTools(packages: Record<string, string>): void {
  const missing = Object.entries(packages).filter(([command]) => {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return;
  const names = [...new Set(missing.map(([, pkg]) => pkg))];
  console.log(`installing ${names.join(', ')} from Debian…`);
  execFileSync(
    'sh',
    [
      '-c',
      `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${names.join(' ')}`,
    ],
    { stdio: 'inherit' },
  );
}
