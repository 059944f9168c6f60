/**
 * An audit stream's receiver for the benchmarks: a syslog-over-TCP listener on loopback that reads and
 * drops what it is sent (the cheapest a real receiver could be, so a figure measures Coffer's side of a
 * stream). Started as its own process, pinned beside wrk, and stopped with it.
 *
 *   node dist/bench/stream-sink.js      prints "listening <port>"
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pinned } from './machine.js';

const SELF = fileURLToPath(import.meta.url);

/** Starts the sink as a child process pinned to `core`; resolves to its port and a stop. */
export async function startStreamSink(
  core: number | null,
): Promise<{ port: number; stop: () => void }> {
  const [cmd, args] = pinned(core, process.execPath, [SELF]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the stream sink exited ${code}`)));
  });
  return { port, stop: () => child.kill() };
}

if (process.argv[1] === SELF) {
  const server = createServer((socket) => {
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
  });
}
