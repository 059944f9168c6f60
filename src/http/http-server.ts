/**
 * The HTTP(S) server around the request listener (http-app.ts): its time limits, the answers to what Node
 * cannot parse (client-errors.ts), and listening, with a port in use or a wrong address said in one line.
 */
import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import {
  type AddressInfo,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { markUpgrade } from '../api/upgrades.js';
import { ConfigError } from '../errors.js';
import type { HttpApp } from './http-app.js';

/** The settings it uses (config/schema.ts names them the same). */
export interface ListenSettings {
  readonly host: string;
  readonly port: number;
}

export interface ServingHttp {
  readonly server: Server;
  /** e.g. http://127.0.0.1:8750 */
  readonly url: string;
}

/** The TLS certificate and key, read before anything is created (a missing file stops start-up in one line). */
export function readTls(config: {
  readonly tls: { readonly cert: string | null; readonly key: string | null };
}): { cert: Buffer; key: Buffer } | null {
  if (config.tls.cert === null || config.tls.key === null) return null;
  const read = (path: string, setting: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new ConfigError(
        setting,
        `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  };
  return {
    cert: read(config.tls.cert, 'COFFER_TLS_CERT'),
    key: read(config.tls.key, 'COFFER_TLS_KEY'),
  };
}

export async function serveHttp(
  app: HttpApp,
  config: ListenSettings & { readonly request_timeout_seconds: number },
  tls: { cert: Buffer; key: Buffer } | null,
): Promise<ServingHttp> {
  // Time limits are checked every second (Node's default: every 30 s).
  const limits = { connectionsCheckingInterval: 1000 };
  const server = tls
    ? createHttpsServer({ ...limits, ...tls }, app.listener)
    : createHttpServer(limits, app.listener);
  // A slow client holds a connection at most this long (Node's default is five minutes).
  server.requestTimeout = config.request_timeout_seconds * 1000;
  server.headersTimeout = Math.min(10_000, server.requestTimeout);
  server.on('clientError', app.onClientError);
  // A request asking to switch protocols (a WebSocket handshake: Vault's event subscription) is served as
  // any other: routed, authenticated and audited. The operation that takes it switches (respond.switching);
  // any other answer is written as usual, and the connection closes after it.
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    markUpgrade(req, socket, head);
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.on('finish', () => socket.end());
    app.listener(req, res);
  });
  await listen(server, config);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { server, url: `${tls ? 'https' : 'http'}://${host}:${address.port}` };
}

/**
 * Stops serving: every answer from now on closes its connection, so keep-alive clients under load let go;
 * each of `features` drains once no new connection is taken (answering its held waits, say); idle connections
 * close at once and the others after `drainMs`. A connection closed under a request does not end its
 * work: resolves once each request still running is answered (or found undelivered) and audited, or after
 * a grace period with a warning.
 */
export async function stopServing(
  server: Server,
  app: HttpApp,
  drainMs: number,
  features: readonly { drain(): void }[],
  log: Logger,
): Promise<void> {
  app.inFlight.drain();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const feature of features) feature.drain();
  server.closeIdleConnections();
  const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
  await closed;
  clearTimeout(deadline);
  if (!(await app.inFlight.settled(IN_FLIGHT_GRACE_MS)))
    log.warn(
      { in_flight: app.inFlight.size },
      'requests still running at shutdown; closing the audit log anyway',
    );
}

/** How long a stop waits, once its connections are closed, for requests still being worked on. */
const IN_FLIGHT_GRACE_MS = 5_000;

/** Listens, or throws a ConfigError naming COFFER_PORT or COFFER_HOST. */
async function listen(server: Server | NetServer, config: ListenSettings): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(
          new ConfigError(
            'COFFER_PORT',
            `port ${config.port} on ${config.host} is already in use; stop what uses it or choose another port`,
          ),
        );
      else if (err.code === 'EACCES')
        reject(
          new ConfigError(
            'COFFER_PORT',
            `this user may not listen on port ${config.port} (ports below 1024 need privileges); choose a port from 1024`,
          ),
        );
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
        reject(new ConfigError('COFFER_HOST', `${config.host} is not an address of this machine`));
      else reject(err);
    });
    server.listen(config.port, config.host, () => resolve());
  });
}

/**
 * Whether this process may listen on the configured address: checked before the store is prepared, so a
 * port in use stops start-up with one line before anything is created. (Port 0 is always free.)
 */
export async function checkListenable(config: ListenSettings): Promise<void> {
  if (config.port === 0) return;
  const probe = createNetServer();
  await listen(probe, config);
  await new Promise((resolve) => probe.close(resolve));
}
