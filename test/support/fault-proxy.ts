/**
 * A proxy in front of a real server that misbehaves on purpose, for the client's retry tests: for each
 * request, `fault` decides whether it passes, is answered by the proxy (a 503 with Retry-After, say), or has
 * its connection destroyed — before it reaches the server, or after the server applied it and answered —, or
 * is never answered.
 */
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  | 'pass'
  | 'reset-before'
  | 'reset-after'
  | 'hang'
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: unknown };

export interface FaultProxy {
  readonly url: string;
  /** Every request the proxy received, in order: method and path. */
  readonly seen: { method: string; path: string }[];
  close(): Promise<void>;
}

export async function startFaultProxy(
  target: string,
  fault: (req: IncomingMessage, index: number) => Fault,
  port = 0,
): Promise<FaultProxy> {
  const seen: { method: string; path: string }[] = [];
  const server: Server = createServer((req, res) => {
    const index = seen.length;
    seen.push({ method: req.method ?? '', path: req.url ?? '' });
    const decided = fault(req, index);
    if (decided === 'hang') return; // never answered
    if (decided === 'reset-before') {
      req.socket.destroy();
      return;
    }
    if (typeof decided === 'object') {
      req.resume();
      const body = decided.body === undefined ? '' : JSON.stringify(decided.body);
      res.writeHead(decided.status, {
        'content-type': 'application/problem+json',
        ...decided.headers,
      });
      res.end(body);
      return;
    }
    const upstream = request(
      `${target}${req.url}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        if (decided === 'reset-after') {
          // The server has applied it and answered; the client never hears.
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
