import { createServer, type Server, Socket } from 'node:net';
import { PG_TEST_URL } from './postgres.js';

/**
 * A TCP relay to the test server, which a test can cut and restore (PostgreSQL going away and back), and
 * which counts the statements its clients send: each Execute message of the extended protocol, and each
 * simple Query message (however many statements its text holds).
 */
export class Relay {
  private readonly sockets = new Set<Socket>();
  private server: Server | null = null;
  port = 0;
  statements = 0;

  constructor(private readonly target: URL) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(Number(this.target.port || 5432), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.on('data', this.counter());
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /**
   * Reads one client's stream as the protocol's messages: the start-up message has no type byte, every
   * later one is a type byte and a 32-bit length that counts itself and the body.
   */
  private counter(): (chunk: Buffer) => void {
    let pending = Buffer.alloc(0);
    let started = false;
    return (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const head = started ? 1 : 0;
        if (pending.length < head + 4) return;
        const size = head + pending.readUInt32BE(head);
        if (pending.length < size) return;
        if (started && (pending[0] === 0x45 || pending[0] === 0x51)) this.statements++; // 'E', 'Q'
        started = true;
        pending = pending.subarray(size);
      }
    };
  }

  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
    this.server = null;
  }

  url(): string {
    const url = new URL(PG_TEST_URL);
    url.port = String(this.port);
    return url.toString();
  }
}
