/**
 * Requests that ask to switch protocols (`Connection: Upgrade`, a WebSocket handshake): the HTTP server
 * (http/http-server.ts) serves them through the same pipeline as any request — routed, authenticated,
 * audited — and keeps here what the operation that takes one needs to take over its connection.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const upgrades = new WeakMap<IncomingMessage, { socket: Duplex; head: Buffer }>();

/** `req` came as an upgrade on `socket`, with `head` (bytes already read past its headers). */
export function markUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
  upgrades.set(req, { socket, head });
}

/** The connection of an upgrade request, to take over; undefined for any other request. */
export function upgradeOf(req: IncomingMessage): { socket: Duplex; head: Buffer } | undefined {
  return upgrades.get(req);
}
