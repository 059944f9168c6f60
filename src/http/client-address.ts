/**
 * The client address of a request: the connection's peer, unless that peer is a trusted reverse proxy
 * (`trusted_proxies`, COFFER_TRUSTED_PROXIES: CIDRs or single addresses). Then it is read from
 * X-Forwarded-For, right to left, skipping trusted proxies: the first address that is not one is the client.
 * A client cannot forge its address by sending the header itself, since only a trusted peer's header is
 * read, and only the hops its proxies appended are believed.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { addressBlocks } from '../model/address-blocks.js';

export type ClientAddress = (req: IncomingMessage) => string;

/** "::ffff:10.0.0.1" (an IPv4 peer on a dual-stack socket) is 10.0.0.1. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

export function clientAddressOf(trustedProxies: readonly string[]): ClientAddress {
  if (trustedProxies.length === 0) return (req) => plain(req.socket.remoteAddress ?? '');
  const trusted = addressBlocks(trustedProxies);
  const isTrusted = (address: string): boolean => {
    const family = isIP(address);
    return family !== 0 && trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
  return (req) => {
    let client = plain(req.socket.remoteAddress ?? '');
    const header = req.headers['x-forwarded-for'];
    if (!isTrusted(client) || header === undefined) return client;
    const hops = (Array.isArray(header) ? header.join(',') : header).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i]!.trim());
      if (isIP(hop) === 0) break; // garbage: believe nothing further left
      client = hop;
      if (!isTrusted(hop)) break;
    }
    return client;
  };
}
