/**
 * How an audit stream (audit-stream.ts) reaches its receiver. `send` delivers lines in order and resolves
 * once the receiver has them, as far as its protocol can tell; when it rejects, the stream sends the same
 * lines again later. A transport never logs a line, a header or a URL's credentials.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, connect as netConnect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import glossy from 'glossy';
import type { StreamSpec } from './stream-spec.js';

export interface StreamTransport {
  send(lines: readonly string[]): Promise<void>;
  /** Of the lines sent, how many of the newest may still be lost with the connection (syslog's). */
  inDoubt(): number;
  close(): void;
}

/** How long a send may take before it counts as failed (and is sent again). */
const SEND_TIMEOUT_MS = 10_000;

export function transportFor(spec: StreamSpec): StreamTransport {
  switch (spec.kind) {
    case 'stdout':
      return new StdoutTransport();
    case 'http':
      return new HttpTransport(spec);
    default:
      return new SyslogTransport(spec);
  }
}

class StdoutTransport implements StreamTransport {
  send(lines: readonly string[]): Promise<void> {
    return new Promise((resolve, reject) =>
      process.stdout.write(lines.map((line) => `${line}\n`).join(''), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }

  inDoubt(): number {
    return 0;
  }

  close(): void {}
}

/**
 * Syslog over TCP or TLS: each line one RFC 5424 message (facility log audit, severity info, app name
 * `coffer`, MSGID `audit`), framed by octet counting (RFC 6587 §3.4.1), so a line is never split or joined
 * whatever it holds. TCP acknowledges nothing a program can see: a line counts as delivered once the
 * kernel took it on a connection that then stayed up for IN_DOUBT_MS. When the connection breaks, the lines
 * sent on it within that time are sent again, first, on the next one — the receiver may get a line twice
 * (in order), never lose one to a receiver that went away (verify --against takes duplicates).
 */
class SyslogTransport implements StreamTransport {
  private socket: Socket | null = null;
  private connecting: Promise<Socket> | null = null;
  private broken: Error | null = null;
  /**
   * Batches written on the current connection recently enough that its loss may have taken them, kept as
   * the bytes sent (outside the JavaScript heap: two seconds of a busy server's lines, held as strings,
   * would be garbage the collector carries into its old generation).
   */
  private doubted: { readonly frames: Buffer; readonly lines: number; readonly at: number }[] = [];
  private readonly producer: { produce(options: object): string | false };

  constructor(private readonly spec: StreamSpec) {
    this.producer = new glossy.Produce({
      type: 'RFC5424',
      appName: 'coffer',
      pid: process.pid,
      host: hostname(),
    });
  }

  async send(lines: readonly string[]): Promise<void> {
    const socket = await this.open();
    const now = Date.now();
    while (this.doubted.length > 0 && now - this.doubted[0]!.at >= IN_DOUBT_MS)
      this.doubted.shift();
    const frames = this.frames(lines);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('timed out')), SEND_TIMEOUT_MS);
      const fail = (err: Error) => {
        clearTimeout(timer);
        this.drop(socket, err);
        reject(err);
      };
      socket.write(frames, (err) => {
        clearTimeout(timer);
        if (err) return fail(err);
        if (this.broken) return reject(this.broken);
        resolve();
      });
    });
    this.doubted.push({ frames, lines: lines.length, at: now });
  }

  inDoubt(): number {
    return this.doubted.reduce((n, sent) => n + sent.lines, 0);
  }

  close(): void {
    this.socket?.end();
    this.socket = null;
  }

  /**
   * The batch as octet-counted RFC 5424 messages. The header (time, host, app, pid, MSGID) is made once per
   * batch — the audit line carries its own time — and each frame is `<bytes> <header><line>`.
   */
  private frames(lines: readonly string[]): Buffer {
    // glossy makes a whole message: made around one character, which is then taken off.
    const message = this.producer.produce({
      facility: 'audit',
      severity: 'info',
      msgID: 'audit',
      date: new Date(),
      message: '.',
    });
    if (message === false) throw new Error('the syslog message could not be made');
    const header = message.slice(0, -1);
    const headerBytes = Buffer.byteLength(header);
    let text = '';
    for (const line of lines) text += `${headerBytes + Buffer.byteLength(line)} ${header}${line}`;
    return Buffer.from(text);
  }

  private open(): Promise<Socket> {
    if (this.socket && !this.broken) return Promise.resolve(this.socket);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<Socket> {
    const { host, port, ca } = this.spec;
    const again = this.doubted;
    this.doubted = [];
    const socket = await new Promise<Socket>((resolve, reject) => {
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error('connection timed out'));
      }, SEND_TIMEOUT_MS);
      const ready = () => {
        clearTimeout(timer);
        s.off('error', failed);
        resolve(s);
      };
      const failed = (err: Error) => {
        clearTimeout(timer);
        s.destroy();
        reject(err);
      };
      const s: Socket =
        this.spec.kind === 'syslog-tls'
          ? tlsConnect(
              {
                host,
                port: port!,
                // SNI names a host, never an address (RFC 6066); an address is checked against the
                // certificate's IP entries all the same.
                ...(isIP(host!) ? {} : { servername: host }),
                ...(ca ? { ca } : {}),
              },
              ready,
            )
          : netConnect({ host: host!, port: port! }, ready);
      s.once('error', failed);
    }).catch((err: Error) => {
      // Still in doubt: sent first on the next connection.
      this.doubted = again;
      throw err;
    });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    this.broken = null;
    socket.on('error', (err) => this.drop(socket, err));
    // A receiver never writes to us: whatever it sends, or its close, means the connection is done.
    socket.on('data', () => undefined);
    socket.on('end', () => this.drop(socket, new Error('the receiver closed the connection')));
    socket.on('close', () => this.drop(socket, new Error('the connection closed')));
    this.socket = socket;
    if (again.length > 0) {
      // What the broken connection may have lost goes first, in order (as it was sent).
      const frames = Buffer.concat(again.map((sent) => sent.frames));
      await new Promise<void>((resolve, reject) =>
        socket.write(frames, (err) => (err ? reject(err) : resolve())),
      ).catch((err: Error) => {
        this.doubted = again;
        this.drop(socket, err);
        throw err;
      });
      const now = Date.now();
      this.doubted = again.map((sent) => ({ ...sent, at: now }));
    }
    return socket;
  }

  private drop(socket: Socket, err: Error): void {
    if (this.socket !== socket) return;
    this.broken = err;
    this.socket = null;
    socket.destroy();
  }
}

/** A line written on a connection that stayed up this long after is taken as delivered (syslog). */
const IN_DOUBT_MS = 2_000;

/** NDJSON batches POSTed; any 2xx is the receiver's acknowledgement of the whole batch. */
class HttpTransport implements StreamTransport {
  constructor(private readonly spec: StreamSpec) {}

  send(lines: readonly string[]): Promise<void> {
    const body = Buffer.from(lines.map((line) => `${line}\n`).join(''));
    const url = new URL(this.spec.url!);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          headers: {
            ...this.spec.headers,
            'Content-Type': 'application/x-ndjson',
            'Content-Length': String(body.length),
          },
          timeout: SEND_TIMEOUT_MS,
          ...(this.spec.ca ? { ca: this.spec.ca } : {}),
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve();
            else reject(new Error(`the receiver answered ${status}`));
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end(body);
    });
  }

  inDoubt(): number {
    return 0;
  }

  close(): void {}
}
