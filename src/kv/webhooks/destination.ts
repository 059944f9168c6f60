/**
 * Where a webhook may be delivered. A webhook makes the server send requests to an address someone gave it:
 * without a check, a token that may manage webhooks reaches what only the server can reach — its own
 * loopback, the cloud's metadata service (169.254.169.254), the private network behind it (server-side
 * request forgery). So a destination is refused when its address is anything but global unicast (IANA's
 * special-purpose ranges, isPrivateAddress), in IPv4 or IPv6, unless COFFER_WEBHOOKS_ALLOW_PRIVATE=true. A name is checked when the webhook is put (every address it
 * resolves to) and again at each delivery, on the very addresses the connection then uses (`lookup`), so a
 * name that resolves elsewhere later (DNS rebinding) is refused then.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalid } from '../../errors.js';

/**
 * Whether `address` (an IPv4 or IPv6 literal) is one a webhook may not reach without the setting: any
 * address ipaddr.js does not classify as plain global unicast. Its ranges follow IANA's special-purpose
 * address registries for IPv4 and IPv6 — loopback, private, shared (CGNAT), link-local, unique-local,
 * documentation, benchmarking, reserved, multicast, and every form that carries an IPv4 address inside an
 * IPv6 one (IPv4-mapped and -compatible, SIIT, NAT64 well-known and local-use, 6to4, Teredo) — kept up to
 * date by the library rather than a hand list here; and an IPv6 address outside 2000::/3.
 */
function isPrivateAddress(address: string): boolean {
  if (isIP(address) === 0) return true;
  const parsed = ipaddr.parse(address);
  if (parsed.range() !== 'unicast') return true;
  // IPv6 beyond 2000::/3, IANA's global unicast space, is unassigned or reserved (::/96, the deprecated
  // IPv4-compatible form, among it: ::7f00:1 is 127.0.0.1).
  return parsed.kind() === 'ipv6' && (parsed.toByteArray()[0]! & 0xe0) !== 0x20;
}

/** The URL's host as an address or a name (an IPv6 literal without its brackets). */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * `text` as a webhook destination: an http or https URL with a host, no credentials (they would be shown
 * wherever the webhook is) and no fragment. 400 otherwise.
 */
export function parseDestination(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid('url is not a URL', [{ field: '/url', in: 'body', message: 'must be a URL' }]);
  }
  const problem =
    url.protocol !== 'http:' && url.protocol !== 'https:'
      ? 'must be http:// or https://'
      : url.username !== '' || url.password !== ''
        ? 'must not hold credentials (a header from the receiver side, or a secret path, instead)'
        : url.hash !== ''
          ? 'must not have a fragment'
          : url.hostname === ''
            ? 'must name a host'
            : undefined;
  if (problem) throw invalid(`url ${problem}`, [{ field: '/url', in: 'body', message: problem }]);
  return url;
}

const privateRefused = (what: string) =>
  invalid(
    `url ${what} a loopback, private, link-local or reserved address; webhooks reach only public addresses unless the server allows private ones (COFFER_WEBHOOKS_ALLOW_PRIVATE=true)`,
    [{ field: '/url', in: 'body', message: 'must reach a public address' }],
  );

/** The addresses `host` resolves to (every one). */
function resolve(host: string): Promise<LookupAddress[]> {
  return new Promise((done, fail) =>
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) =>
      err ? fail(err) : done(addresses),
    ),
  );
}

/**
 * Checks a destination when a webhook is put: an address literal, or every address its name resolves to,
 * must be public (unless `allowPrivate`); a name that does not resolve is refused, as a typo would be.
 */
export async function checkDestination(url: URL, allowPrivate: boolean): Promise<void> {
  const host = hostOf(url);
  if (isIP(host) !== 0) {
    if (!allowPrivate && isPrivateAddress(host)) throw privateRefused('is');
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    throw invalid(`url's host ${JSON.stringify(host)} does not resolve`, [
      { field: '/url', in: 'body', message: 'host does not resolve' },
    ]);
  }
  if (!allowPrivate && addresses.some((a) => isPrivateAddress(a.address)))
    throw privateRefused('resolves to');
}

/** Refused at delivery: the destination now reaches a private address. */
export class PrivateDestinationError extends Error {
  readonly code = 'private_destination';
  constructor() {
    super('the destination reaches a loopback, private or reserved address');
  }
}

/**
 * A `lookup` for node:http's request that resolves as usual and refuses (PrivateDestinationError) when any
 * address is private, unless `allowPrivate`: the connection is made only to addresses it checked.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: { all?: boolean },
    callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolve(hostname).then(
      (addresses) => {
        if (!allowPrivate && addresses.some((a) => isPrivateAddress(a.address)))
          return callback(new PrivateDestinationError(), '');
        if (options.all) return callback(null, addresses);
        const first = addresses[0]!;
        callback(null, first.address, first.family);
      },
      (err: Error) => callback(err, ''),
    );
  };
}

/** A literal address in the URL, which node:http connects to without a lookup: checked here. */
export function literalRefused(url: URL, allowPrivate: boolean): boolean {
  const host = hostOf(url);
  return !allowPrivate && isIP(host) !== 0 && isPrivateAddress(host);
}
