/**
 * What Node's HTTP parser refuses before a route sees it ('clientError'), answered as problem+json like
 * everything else (Node would send a bare status line): 400 for what is not HTTP/1.1, 431 for headers
 * over Node's limit, 408 for a request not received in time. A request whose headers arrived but whose
 * body did not come in time is already a request: it is answered through the responder, so its audit
 * entry records the 408 the client gets (it used to record the 400 of the body reader that failed after).
 *
 * What is refused before any request exists has no audit entry: its X-Request-Id names the server log's
 * line (`http.refused`) instead, with the status and the client's address. Vault's LIST verb is the one
 * refusal answered otherwise: a 303 to the same path with `list=true` (list-verb.ts).
 */
import type { Duplex } from 'node:stream';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { type Responder, socketProblem, socketRedirect } from '../api/respond.js';
import { randomBase62 } from '../crypto/random.js';
import { AppError, invalid } from '../errors.js';
import { listRedirectTarget } from './list-verb.js';

/** The response a connection is serving, if any (kept by the request listener, http-app.ts). */
export type InFlight = Pick<WeakMap<Duplex, Response>, 'get'>;

const NOT_HTTP = () =>
  invalid(
    'the request is not valid HTTP/1.1 (characters outside ASCII in the URL must be percent-encoded as UTF-8)',
    [{ field: '', in: 'request', message: 'not valid HTTP/1.1' }],
  );

export function clientErrorListener(deps: {
  readonly inFlight: InFlight;
  readonly respond: Responder;
  readonly tls: boolean;
  /** How long a whole request may take (COFFER_REQUEST_TIMEOUT), for the 408's detail. */
  readonly requestTimeoutSeconds: number;
  readonly log: Logger;
}): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  /** Answers on the socket itself, and logs the answer under the id it gives. */
  const refuse = (socket: Duplex, error: AppError): void => {
    const requestId = randomBase62(16);
    deps.log.info(
      {
        event: 'http.refused',
        request_id: requestId,
        status: error.status,
        code: error.code,
        client: (socket as { remoteAddress?: string }).remoteAddress,
      },
      'refused before a request was read',
    );
    socketProblem(socket, error, deps.tls, requestId);
  };
  const redirectList = (socket: Duplex, location: string): void => {
    const requestId = randomBase62(16);
    deps.log.info(
      { event: 'http.list_redirected', request_id: requestId, status: 303 },
      'LIST sent to the same path with list=true',
    );
    socketRedirect(
      socket,
      location,
      "Coffer's HTTP server cannot read the LIST method: ask again with GET and list=true",
      deps.tls,
      requestId,
    );
  };
  return (err, socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy();
    const res = deps.inFlight.get(socket);
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      const detail = res
        ? `the request was not received whole within ${deps.requestTimeoutSeconds} s`
        : 'the request headers were not received in time';
      // The connection cannot be used again: what is left of the body is never read.
      const timeout = new AppError('request_timeout', detail, undefined, { Connection: 'close' });
      if (res && !res.writableEnded && !deps.respond.answered(res)) {
        deps.respond.problem(res, timeout);
        return;
      }
      if (!res || res.writableEnded) return refuse(socket, timeout);
    }
    // Read now: the parser's packet is reused once this returns.
    const listTarget = listRedirectTarget(err, res !== undefined);
    const answer = (): void => {
      if (!socket.writable) return void socket.destroy();
      if (listTarget !== undefined) {
        redirectList(socket, listTarget);
        return;
      }
      refuse(
        socket,
        err.code === 'HPE_HEADER_OVERFLOW'
          ? new AppError(
              'headers_too_large',
              'the request headers are larger than the server accepts (16 KiB)',
            )
          : NOT_HTTP(),
      );
    };
    // The request being answered never came whole (the client left mid-body): nothing more to say.
    if (res && !res.writableEnded && !res.req.complete) return void socket.destroy();
    // A request before it on this connection (pipelined in the same packet) came whole and is still being
    // answered: it may have changed something, so its answer goes out first, then this refusal, which closes.
    if (res && !res.writableEnded) {
      res.once('finish', answer);
      res.once('close', () => {
        if (!res.writableFinished) socket.destroy();
      });
      return;
    }
    answer();
  };
}
