/**
 * A webhook receiver for the tests: a real HTTP server on loopback that keeps every request it takes
 * (headers and body as received), answers 204 — or what `answer` says —, and can go away (its port
 * closed: connections refused) and come back on the same port.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly received: Received[];
  /** The status to answer with (204 by default). */
  answer: number;
  /** Closes the port: nothing is taken until `up`. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  let server: Server;
  let port = 0;
  const receiver: WebhookReceiver = {
    url: '',
    received,
    answer: 204,
    down: () => close(),
    up: () => listen(),
    close: () => close(),
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          if (receiver.answer >= 200 && receiver.answer < 300)
            received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(receiver.answer).end();
        });
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  await listen();
  (receiver as { url: string }).url = `http://127.0.0.1:${port}/hooks/coffer`;
  return receiver;
}
