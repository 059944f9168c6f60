/**
 * Vault's `LIST` verb, which hvac and node-vault send to list a folder. Node's HTTP parser refuses a method
 * it does not know before any request exists ('clientError', HPE_INVALID_METHOD), so a LIST cannot reach
 * the routes. What it can get is a 303 See Other to the same path with `list=true`, the form Vault's Go
 * client sends and Coffer serves: a client that follows redirects (requests, axios, Go's net/http) asks
 * again with GET, its token header kept, on a new connection (the 303 closes this one, so nothing after
 * the refused request line is ever parsed: no bytes are rewritten and no framing is guessed).
 *
 * Only a whole request line `LIST /vault/v1/<path> HTTP/1.x` at the start of a request gets the 303; the
 * Location is that same path, so it never leaves the origin (it starts with one `/` and `/vault/v1/`) nor
 * Vault's root (no dot segments).
 */
import { VAULT_ROOT } from '../api/vault-dialect.js';

const LIST = Buffer.from('LIST ', 'latin1');
/** The request line: a target of visible ASCII under Vault's root, nothing else. */
const REQUEST_LINE = new RegExp(`^LIST (${VAULT_ROOT}/[!-~]*) HTTP/1\\.[01]\\r\\n`);
/** How far back from where the parser stopped the method may begin (it stops inside the method). */
const METHOD_LENGTH = 8;

/** What Node's parser reports with a refusal (documented for 'clientError'). */
export interface ParseFailure {
  readonly code?: string;
  readonly bytesParsed?: number;
  readonly rawPacket?: Buffer;
}

/** Where a refused LIST request should ask again (`<path>?list=true`), or undefined if it is not one. */
export function listRedirectTarget(
  err: ParseFailure,
  /** A request came before it on this connection (whose body may end right where it begins). */
  afterRequest = false,
): string | undefined {
  const raw = err.rawPacket;
  if (err.code !== 'HPE_INVALID_METHOD' || !Buffer.isBuffer(raw) || err.bytesParsed === undefined)
    return undefined;
  const stop = Math.min(err.bytesParsed, raw.length);
  for (let at = stop; at >= Math.max(0, stop - METHOD_LENGTH); at--) {
    // A request begins the packet or follows the line end of the one before — or, pipelined after a
    // request with a body (`afterRequest`), its body's last byte; never inside a longer method.
    const before = at > 0 ? raw[at - 1]! : 0x0a;
    if (before !== 0x0a && (!afterRequest || (before >= 0x41 && before <= 0x5a))) continue;
    if (!raw.subarray(at, at + LIST.length).equals(LIST)) continue;
    const line = REQUEST_LINE.exec(raw.subarray(at, at + 8192).toString('latin1'));
    if (!line) return undefined;
    const target = line[1]!;
    const query = target.indexOf('?');
    const path = query >= 0 ? target.slice(0, query) : target;
    // A dot segment would take the client elsewhere once it resolves the Location.
    if (path.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) return undefined;
    if (query >= 0 && /(^|&)list=/.test(target.slice(query + 1))) return undefined;
    return `${target}${query >= 0 ? '&' : '?'}list=true`;
  }
  return undefined;
}
