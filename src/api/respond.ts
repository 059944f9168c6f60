/**
 * The one place answers are written: every response, every problem+json body (problemBody), and the
 * answers given on a bare socket to what Node could not parse as a request (socketProblem). Every response
 * gets helmet's headers and `Cache-Control: no-store`, computed once (helmet runs a single time against a
 * recording response) and written together with the status in one writeHead. That is cheaper than a
 * middleware calling setHeader a dozen times per request plus Express's res.json, which also checks
 * freshness for ETags Coffer never uses.
 *
 * A response is answered once: the first answer wins and any later one is dropped (a request that timed
 * out is answered 408, and its body reader then fails too), so the audit entry, written as the answer
 * goes out, always records what the client got.
 */
import type { Duplex } from 'node:stream';
import type { Response } from 'express';
import helmet from 'helmet';
import { PooledIds } from '../crypto/random.js';
import { AppError, shownDetail } from '../errors.js';
import type { InFlight } from './in-flight.js';
import { vaultErrorBody } from './vault-dialect.js';

/** The problem+json body for `error` (RFC 9457): the one place such a body is made. */
export function problemBody(error: AppError): string {
  const body: Record<string, unknown> = {
    ...error.members,
    type: `urn:coffer:problem:${error.code}`,
    title: error.title,
    status: error.status,
    detail: shownDetail(error.code, error.detail),
    code: error.code,
  };
  if (error.issues && error.issues.length > 0) body.errors = error.issues;
  // Every 400 lists what was wrong; where no field was named, the request as a whole.
  else if (error.status === 400)
    body.errors = [{ field: '', in: 'request', message: error.detail }];
  return JSON.stringify(body);
}

export type HeaderList = readonly (readonly [string, string])[];

/**
 * Helmet configured for a JSON API (OWASP REST Security Cheat Sheet) rather than for HTML pages: a CSP
 * that allows nothing, no framing, no referrer, nosniff, HSTS, same-origin resources. Stricter than
 * helmet's page defaults, and about 400 bytes smaller on every response.
 */
const API_HELMET = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: { policy: 'same-origin' },
  originAgentCluster: false,
  referrerPolicy: { policy: 'no-referrer' },
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xFrameOptions: { action: 'deny' },
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
} as const;

function securityHeaders(tls: boolean): string[] {
  const flat: string[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]): void {
      flat.push(name, String(value));
    },
    removeHeader(): void {},
  };
  // HSTS means something only over HTTPS (RFC 6797 says to ignore it over plain HTTP): sent only with TLS.
  helmet({ ...API_HELMET, strictTransportSecurity: tls })(
    {} as never,
    recorder as never,
    () => undefined,
  );
  flat.push('Cache-Control', 'no-store');
  return flat;
}

export interface Responder {
  /** The request's id (X-Request-Id), the same for its intent entry, its audit entry and its response. */
  requestId(res: Response): string;
  json(res: Response, status: number, body: unknown, headers?: HeaderList): void;
  /** A response with no body (204). */
  empty(res: Response, status: number, headers?: HeaderList): void;
  /** A raw body of the given media type. */
  raw(res: Response, status: number, contentType: string, body: string, headers?: HeaderList): void;
  /** The problem+json answer for `error`, with its headers. */
  problem(res: Response, error: AppError): void;
  /**
   * Opens a streamed answer (200, `contentType`, written to as it goes, ended by its handler): once its
   * audit entry is durable the head is sent and true is given back; false when the entry could not be
   * written (the client then got the refusal, 503) or the request was answered already.
   */
  stream(res: Response, contentType: string, headers?: HeaderList): Promise<boolean>;
  /**
   * Switches protocols (a WebSocket handshake, api/upgrades.ts): once its audit entry (101) is durable,
   * `open` takes the connection and true is given back; false as for `stream`.
   */
  switching(res: Response, open: () => void): Promise<boolean>;
  /** Whether `res` has been answered (or its answer is waiting for its audit entry). */
  answered(res: Response): boolean;
}

/**
 * A problem+json answer written straight to a socket on which Node could not parse a request (not HTTP,
 * headers too large, headers not received in time): there is no request to record, and the connection is
 * closed after it.
 */
export function socketProblem(
  socket: Duplex,
  error: AppError,
  tls: boolean,
  requestId: string,
): void {
  const body = problemBody(error);
  socketAnswer(socket, `${error.status} ${error.title}`, tls, requestId, body, [
    'Content-Type',
    'application/problem+json',
  ]);
}

/**
 * A 303 See Other written straight to such a socket (Vault's LIST verb, list-verb.ts), its body a line
 * saying why; the connection is closed after it.
 */
export function socketRedirect(
  socket: Duplex,
  location: string,
  detail: string,
  tls: boolean,
  requestId: string,
): void {
  socketAnswer(socket, '303 See Other', tls, requestId, `${detail}\n`, [
    'Location',
    location,
    'Content-Type',
    'text/plain; charset=utf-8',
  ]);
}

function socketAnswer(
  socket: Duplex,
  statusLine: string,
  tls: boolean,
  requestId: string,
  body: string,
  extra: readonly string[],
): void {
  const headers = [
    ...securityHeaders(tls),
    ...extra,
    'Content-Length',
    String(Buffer.byteLength(body)),
    'X-Request-Id',
    requestId,
    'Connection',
    'close',
  ];
  const lines = [`HTTP/1.1 ${statusLine}`];
  for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** Records a response before it is sent; false: it could not be recorded, so it must not be sent. */
export type ResponseAuditor = (
  res: Response,
  status: number,
  requestId: string,
) => Promise<boolean>;

const UNAVAILABLE = new AppError(
  'audit_unavailable',
  'the request could not be recorded in the audit log, so its result is withheld; try again later (a write may already be applied)',
);

/**
 * With an auditor, a response is written only once its audit entry is durable; when the entry cannot be
 * written the client gets `refusal()` instead: 503 audit_unavailable, or storage_unavailable when what
 * failed was storing the log's copy in the database. (A write the handler already committed stays
 * committed: its entry is written as soon as the audit log can be written again.)
 */
/** Told of every answer sent, and of how long each audit entry took to be durable (the metrics). */
export interface ResponseObserver {
  sent(res: Response, status: number): void;
  audited(seconds: number): void;
}

export function createResponder(
  auditor?: ResponseAuditor,
  tls = false,
  refusal: () => AppError = () => UNAVAILABLE,
  observer?: ResponseObserver,
  inFlight?: InFlight,
): Responder {
  const common = securityHeaders(tls);
  const requestIds = new PooledIds(16);
  const send = (
    res: Response,
    status: number,
    contentType: string | null,
    body: string,
    extra: HeaderList | undefined,
    requestId: string | null,
  ): void => {
    const headers = common.slice();
    if (contentType !== null)
      headers.push('Content-Type', contentType, 'Content-Length', String(Buffer.byteLength(body)));
    if (requestId !== null) headers.push('X-Request-Id', requestId);
    if (extra) for (const [name, value] of extra) headers.push(name, value);
    // A stopping process ends each keep-alive connection after its answer, so that the stop drains.
    if (inFlight?.draining) headers.push('Connection', 'close');
    res.writeHead(status, headers);
    res.end(body);
    observer?.sent(res, status);
  };
  /** The refusal of an answer whose audit entry could not be written (503, Retry-After). */
  const refuseUnrecorded = (res: Response, id: string): void => {
    const refused = refusal();
    send(
      res,
      refused.status,
      'application/problem+json',
      problemBody(refused),
      [['Retry-After', '1']],
      id,
    );
  };
  const requestId = (res: Response): string => {
    res.locals.requestId ??= requestIds.next();
    return res.locals.requestId;
  };
  const write = (
    res: Response,
    status: number,
    contentType: string | null,
    body: string,
    extra?: HeaderList,
  ): void => {
    if (res.locals.answered === true) return;
    res.locals.answered = true;
    if (!auditor) {
      send(res, status, contentType, body, extra, null);
      return;
    }
    const id = requestId(res);
    const refuse = (): void => refuseUnrecorded(res, id);
    const asked = observer ? performance.now() : 0;
    const answered = auditor(res, status, id).then((recorded) => {
      observer?.audited((performance.now() - asked) / 1000);
      if (recorded) send(res, status, contentType, body, extra, id);
      else refuse();
    }, refuse);
    inFlight?.track(answered);
  };
  return {
    requestId,
    json: (res, status, body, headers) =>
      write(res, status, 'application/json; charset=utf-8', JSON.stringify(body), headers),
    empty: (res, status, headers) => write(res, status, null, '', headers),
    raw: (res, status, contentType, body, headers) =>
      write(res, status, contentType, body, headers),
    problem: (res, error) => {
      if (res.locals.answered === true) return;
      res.locals.outcomeCode = error.code;
      const vault = res.locals.dialect === 'vault';
      write(
        res,
        error.status,
        vault ? 'application/json' : 'application/problem+json',
        vault ? vaultErrorBody(error) : problemBody(error),
        error.headers && Object.entries(error.headers),
      );
    },
    answered: (res) => res.locals.answered === true,
    switching: async (res, open) => {
      if (res.locals.answered === true) return false;
      res.locals.answered = true;
      const id = auditor ? requestId(res) : null;
      if (id === null || (await auditor!(res, 101, id).catch(() => false))) {
        open();
        observer?.sent(res, 101);
        return true;
      }
      refuseUnrecorded(res, id);
      return false;
    },
    stream: async (res, contentType, extra) => {
      if (res.locals.answered === true) return false;
      res.locals.answered = true;
      const open = (id: string | null): void => {
        const headers = common.slice();
        headers.push('Content-Type', contentType);
        if (id !== null) headers.push('X-Request-Id', id);
        if (extra) for (const [name, value] of extra) headers.push(name, value);
        res.writeHead(200, headers);
        res.flushHeaders();
        observer?.sent(res, 200);
      };
      if (!auditor) {
        open(null);
        return true;
      }
      const id = requestId(res);
      if (await auditor(res, 200, id).catch(() => false)) {
        open(id);
        return true;
      }
      refuseUnrecorded(res, id);
      return false;
    },
  };
}
