/**
 * The metrics on an address of their own (COFFER_METRICS_PORT, COFFER_METRICS_HOST), for a Prometheus
 * that scrapes without a token: the supervisor listens there and answers `GET /metrics` with every
 * worker's metrics, summed (server/metrics-cluster.ts), in Prometheus text. Nothing else is served there:
 * any other path is 404, any other method 405. Whoever reaches that address reads the metrics — which name
 * no key, namespace, token or value, but do tell how busy the server is — so it is meant for a private
 * interface (the default is loopback). The API's own GET /v1/sys/metrics stays, with its privilege.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MetricsListener {
  readonly url: string;
  close(): Promise<void>;
}

const TEXT = 'text/plain; version=0.0.4; charset=utf-8';

/** Listens on `host`:`port` (0: any free port); rejects when it cannot (the server then does not start). */
export async function listenForMetrics(
  address: { readonly host: string; readonly port: number },
  metricsText: () => Promise<string>,
  onError: (err: Error) => void,
): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-content-type-options', 'nosniff');
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('not found: the metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed\n');
      return;
    }
    metricsText().then(
      (text) => {
        res.writeHead(200, { 'content-type': TEXT });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        onError(err as Error);
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('the metrics could not be gathered; try again\n');
      },
    );
  });
  // Slow or idle scrapers do not hold connections for long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
