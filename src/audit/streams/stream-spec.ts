/**
 * COFFER_AUDIT_STREAMS: where every audit line also goes, to a party that does not share the data
 * directory's disk. A comma-separated list of
 *
 *   syslog+tcp://host:port      RFC 5424 over TCP, octet-counted framing (RFC 6587), the JSON line as message
 *   syslog+tls://host:port      the same over TLS (RFC 5425); ?ca=FILE to trust a private CA
 *   https://host[:port]/path    NDJSON batches POSTed; ?bearer_file=FILE or ?header_file=FILE ("Name: value")
 *   http://127.0.0.1:port/path  the same in plain HTTP, to a receiver on this machine only (a sidecar)
 *   stdout:                     standard output, for container log collectors
 *
 * and on any of them ?required=true (each answer waits until that stream has the request's line; down, the
 * server answers 503 audit_unavailable) and ?name=NAME (how metrics, health and logs call it; default
 * `stream-<n>`). A file named is read at start-up; its content is never logged. What does not parse refuses
 * the start, naming the stream by position (the URL may carry credentials).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError } from '../../errors.js';

export type StreamKind = 'syslog-tcp' | 'syslog-tls' | 'http' | 'stdout';

export interface StreamSpec {
  readonly name: string;
  readonly kind: StreamKind;
  readonly required: boolean;
  /** syslog: where to connect. */
  readonly host?: string;
  readonly port?: number;
  /** http(s): the address POSTed to, without Coffer's own parameters. */
  readonly url?: string;
  /** Extra headers for http(s), read from bearer_file or header_file. */
  readonly headers?: Readonly<Record<string, string>>;
  /** PEM of the CA to trust (syslog+tls, https). */
  readonly ca?: Buffer;
}

const SETTING = 'COFFER_AUDIT_STREAMS';
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const OWN_PARAMETERS = ['required', 'name', 'ca', 'bearer_file', 'header_file'];

export function parseStreams(text: string | null | undefined): StreamSpec[] {
  if (!text?.trim()) return [];
  const specs = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part, i) => parseOne(part, i + 1));
  const names = new Set<string>();
  for (const spec of specs) {
    if (names.has(spec.name))
      throw new ConfigError(
        SETTING,
        `two streams are named ${spec.name}: give each its own ?name=`,
      );
    names.add(spec.name);
  }
  return specs;
}

function parseOne(text: string, position: number): StreamSpec {
  const refuse = (problem: string): never => {
    throw new ConfigError(SETTING, `stream ${position}: ${problem}`);
  };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse(
      'is not a URL: write syslog+tcp://host:port, syslog+tls://host:port, https://host/path or stdout:',
    );
  }
  const query = url.searchParams;
  const flag = query.get('required');
  if (flag !== null && flag !== 'true' && flag !== 'false') refuse('required takes true or false');
  const name = query.get('name') ?? `stream-${position}`;
  if (!NAME.test(name)) refuse('name takes 1 to 64 letters, digits, _ . or -');
  const readFile = (parameter: string): Buffer | undefined => {
    const path = query.get(parameter);
    if (path === null) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      return refuse(
        `cannot read the ${parameter} file ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  };
  const common = { name, required: flag === 'true' };
  const ca = readFile('ca');
  switch (url.protocol) {
    case 'stdout:':
      return { ...common, kind: 'stdout' };
    case 'syslog+tcp:':
    case 'syslog+tls:': {
      const port = Number(url.port);
      if (!url.hostname || !Number.isInteger(port) || port < 1 || port > 65535)
        refuse('a syslog stream needs a host and a port (syslog+tcp://host:port)');
      const kind = url.protocol === 'syslog+tls:' ? 'syslog-tls' : 'syslog-tcp';
      return {
        ...common,
        kind,
        host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port,
        ...(ca ? { ca } : {}),
      };
    }
    case 'https:':
    case 'http:': {
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      if (url.protocol === 'http:' && !isLoopback(host))
        refuse('plain http is taken only to this machine (127.0.0.1, ::1, localhost): use https');
      const headers: Record<string, string> = {};
      const bearer = readFile('bearer_file');
      if (bearer) headers.Authorization = `Bearer ${bearer.toString('utf8').trim()}`;
      const header = readFile('header_file');
      if (header) {
        const line = header.toString('utf8').trim();
        const colon = line.indexOf(':');
        if (colon < 1 || /[\r\n]/.test(line))
          refuse('the header_file must hold one line, Name: value');
        headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
      }
      const target = new URL(url);
      for (const own of OWN_PARAMETERS) target.searchParams.delete(own);
      return { ...common, kind: 'http', url: target.toString(), headers, ...(ca ? { ca } : {}) };
    }
    default:
      return refuse(
        `${url.protocol} is not a stream: write syslog+tcp://, syslog+tls://, https:// or stdout:`,
      );
  }
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
