import { connect } from 'node:net';

/** Sends raw bytes on a new connection and returns everything the server sends back before closing. */
export function rawExchange(url: string, bytes: Buffer): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    let text = '';
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}
