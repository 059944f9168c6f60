import { createServer, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import { parseStreams } from '../../src/audit/streams/stream-spec.js';
import { transportFor } from '../../src/audit/streams/transports.js';

/**
 * A syslog receiver over TCP that parses octet-counted frames (RFC 6587 §3.4.1) as they come, keeping each
 * message's text after its RFC 5424 header; `cut()` drops the connection it has.
 */
async function startFrameReceiver(): Promise<{
  port: number;
  messages: string[];
  cut(): void;
  close(): Promise<void>;
}> {
  const messages: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const space = pending.indexOf(0x20);
        if (space < 0) break;
        const size = Number(pending.subarray(0, space).toString('latin1'));
        if (!Number.isInteger(size) || size <= 0)
          throw new Error(`not an octet count: ${pending.subarray(0, 16).toString('latin1')}`);
        if (pending.length < space + 1 + size) break;
        const message = pending.subarray(space + 1, space + 1 + size).toString('utf8');
        // <pri>1 time host app pid msgid - text: the text follows the seventh space.
        let at = -1;
        for (let n = 0; n < 7; n++) at = message.indexOf(' ', at + 1);
        messages.push(message.slice(at + 1));
        pending = pending.subarray(space + 1 + size);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    messages,
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A line of about 500 bytes naming its number, with characters of two and three UTF-8 bytes. */
const line = (n: number): string =>
  JSON.stringify({ seq: n, note: `é€ ${'x'.repeat(460)}`, end: n });

describe('the syslog transport', () => {
  it('frames every line whole and in order (two- and three-byte characters counted as bytes), and after a break sends the lines in doubt again, intact and in order, before the next', async function () {
    this.timeout(60_000);
    const receiver = await startFrameReceiver();
    const [spec] = parseStreams(`syslog+tcp://127.0.0.1:${receiver.port}`);
    const transport = transportFor(spec!);
    try {
      // About 40 MiB within a second or two: many batches still in doubt (kept for a resend) at the break.
      let n = 0;
      for (let batch = 0; batch < 80; batch++) {
        const lines = Array.from({ length: 1000 }, () => line(++n));
        await transport.send(lines);
      }
      const sent = n;
      const inDoubt = transport.inDoubt();
      expect(inDoubt).to.be.greaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The connection breaks; the next send goes on a new one, after what was in doubt.
      receiver.cut();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const last = Array.from({ length: 10 }, () => line(++n));
      await transport
        .send(last)
        .catch(() => transport.send(last)) // the break seen by the first send: sent again, as the stream does
        .catch(() => transport.send(last));
      const deadline = Date.now() + 10_000;
      const lastSeen = () => {
        const text = receiver.messages.at(-1);
        return text === undefined ? 0 : (JSON.parse(text) as { seq: number }).seq;
      };
      while (lastSeen() < n && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));

      // Every message is a whole line; read in order, each is the next or a repeat of one in doubt.
      const seqs = receiver.messages.map((text) => {
        const parsed = JSON.parse(text) as { seq: number; end: number };
        expect(text).to.equal(line(parsed.seq));
        return parsed.seq;
      });
      // Read in order up to the break; then, from the first line in doubt, each again and on to the last.
      const consecutive = (from: number, list: number[]) =>
        list.every((seq, i) => seq === from + i);
      const resent = seqs.findIndex((seq, i) => i > 0 && seq !== seqs[i - 1]! + 1);
      expect(resent).to.be.greaterThan(0);
      expect(consecutive(1, seqs.slice(0, resent))).to.equal(true);
      const again = seqs.slice(resent);
      expect(again[0])
        .to.be.at.most(resent)
        .and.greaterThan(sent - inDoubt);
      expect(consecutive(again[0]!, again)).to.equal(true);
      expect(again.at(-1)).to.equal(n);
    } finally {
      transport.close();
      await receiver.close();
    }
  });
});
