/** Lists of IP addresses and CIDR blocks (trusted reverse proxies: COFFER_TRUSTED_PROXIES). */
import { BlockList, isIP } from 'node:net';

/** Parses "10.0.0.0/8", "::1/128" or a single address; throws a message naming what is wrong. */
export function addressBlocks(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefixText] = entry.trim().split('/');
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (
      family === 0 ||
      !/^\d{0,3}$/.test(prefixText ?? '') ||
      !Number.isInteger(prefix) ||
      prefix < 0 ||
      prefix > max
    ) {
      throw new Error(`"${entry}" is not an IP address or a CIDR block such as 10.0.0.0/8`);
    }
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}
