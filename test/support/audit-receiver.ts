/**
 * An audit stream's HTTP receiver (a SIEM's collector, for the tests): takes NDJSON batches POSTed to it
 * and keeps every line in the order received; `down` makes it answer 503 (an outage) without taking them.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AuditReceiver {
  readonly url: string;
  /** Every line taken, in order. */
  readonly lines: string[];
  /** The lines of each batch taken (one POST's), in order. */
  readonly batches: string[][];
  /** The Authorization headers of the batches taken. */
  readonly authorizations: (string | undefined)[];
  down: boolean;
  /** When set, the first batch it holds true for turns the receiver down (that batch is not taken). */
  downOn: ((batch: readonly string[]) => boolean) | undefined;
  /** Writes the lines taken to `path` as NDJSON (what an auditor's copy would be) and returns it. */
  save(path: string): string;
  close(): Promise<void>;
}

export async function startAuditReceiver(port = 0): Promise<AuditReceiver> {
  const lines: string[] = [];
  const batches: string[][] = [];
  const authorizations: (string | undefined)[] = [];
  const state: { down: boolean; downOn: ((batch: readonly string[]) => boolean) | undefined } = {
    down: false,
    downOn: undefined,
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      const batch = body.split('\n').filter((line) => line !== '');
      if (state.downOn?.(batch)) {
        state.down = true;
        state.downOn = undefined;
      }
      if (state.down || req.method !== 'POST') {
        res.writeHead(503).end();
        return;
      }
      authorizations.push(req.headers.authorization);
      batches.push(batch);
      lines.push(...batch);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}/ingest`,
    lines,
    batches,
    authorizations,
    get down() {
      return state.down;
    },
    set down(value: boolean) {
      state.down = value;
    },
    get downOn() {
      return state.downOn;
    },
    set downOn(value) {
      state.downOn = value;
    },
    save(path) {
      writeFileSync(path, lines.map((line) => `${line}\n`).join(''));
      return path;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
