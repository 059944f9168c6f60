/**
 * An open-loop load: requests fired at a fixed rate over a fixed set of connections, without waiting for
 * the answers (HTTP/1.1 pipelining), the way an attacker floods. wrk and hey are closed-loop — each
 * connection waits for its answer — so a server that holds answers back (the 429 tarpit) would slow them
 * down; this does not slow down. Counts answers by status.
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pinned } from './machine.js';

export interface OpenLoop {
  readonly url: string;
  readonly perSecond: number;
  readonly connections: number;
  readonly seconds: number;
  /** The raw HTTP/1.1 request number `i` (with Host and a blank line). */
  readonly request: (i: number, host: string) => string;
}

export interface OpenLoopResult {
  readonly sent: number;
  readonly answered: number;
  readonly byStatus: Record<string, number>;
}

export async function openLoop(load: OpenLoop): Promise<OpenLoopResult> {
  const { hostname, port } = new URL(load.url);
  const host = `${hostname}:${port}`;
  const byStatus: Record<string, number> = {};
  let answered = 0;
  const sockets: Socket[] = [];
  const open = (): Socket => {
    const socket = connect({ host: hostname, port: Number(port) });
    let tail = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      const text = tail + chunk;
      for (const match of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) {
        byStatus[match[1]!] = (byStatus[match[1]!] ?? 0) + 1;
        answered++;
      }
      tail = text.slice(-16);
    });
    socket.on('error', () => undefined);
    return socket;
  };
  for (let i = 0; i < load.connections; i++) sockets.push(open());
  let sent = 0;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const elapsed = (performance.now() - started) / 1000;
      if (elapsed >= load.seconds) {
        clearInterval(tick);
        resolve();
        return;
      }
      // Catch up to the schedule: as many requests as the rate says should have gone by now.
      const due = Math.floor(elapsed * load.perSecond);
      for (; sent < due; sent++) {
        const index = sent % sockets.length;
        if (sockets[index]!.destroyed) sockets[index] = open();
        sockets[index]!.write(load.request(sent, host));
      }
    }, 5);
  });
  // Answers still held back (the tarpit) arrive within about a second.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  for (const socket of sockets) socket.destroy();
  return { sent, answered, byStatus };
}

/** The same correct request every time: the control, what any 1,000 requests a second cost. */
export function goodRequest(path: string, token: string): OpenLoop['request'] {
  return (_, host) =>
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n\r\n`;
}

/** Wrong secrets of token `tokenId` for `path`, a new one per request. */
export function wrongSecretRequest(path: string, tokenId: string): OpenLoop['request'] {
  return (i, host) =>
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer cfr_${tokenId}_${String(i).padStart(43, '0')}\r\n\r\n`;
}

/**
 * The open-loop flood in a process of its own on `core`, like wrk: load generators are kept off the core
 * they are not pinned to, so that what is measured is the server, not the client.
 */
/** The same JSON body POSTed to `path` every time, without a token (a login: bench/jwt-login.ts). */
export function postRequest(path: string, body: string): OpenLoop['request'] {
  const length = Buffer.byteLength(body);
  return (_, host) =>
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`;
}

/**
 * What the generator process sends: wrong secrets of `tokenId`, or, with `token`, that correct token, or
 * with `body`, that body POSTed to `path`.
 */
type Sent = Omit<OpenLoop, 'request'> & {
  readonly path: string;
  readonly tokenId: string;
  readonly token?: string;
  readonly body?: string;
};

export function openLoopProcess(load: Sent, core: number): Promise<OpenLoopResult> {
  const [cmd, args] = pinned(core, process.execPath, [
    fileURLToPath(import.meta.url),
    JSON.stringify(load),
  ]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as OpenLoopResult)
        : reject(new Error(`open-loop generator exited with ${code}`)),
    );
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const load = JSON.parse(process.argv[2]!) as Sent;
  const result = await openLoop({
    ...load,
    request:
      load.body !== undefined
        ? postRequest(load.path, load.body)
        : load.token === undefined
          ? wrongSecretRequest(load.path, load.tokenId)
          : goodRequest(load.path, load.token),
  });
  process.stdout.write(JSON.stringify(result));
}
