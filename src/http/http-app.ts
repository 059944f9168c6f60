/**
 * The HTTP request listener: the operations of routes/*.ts (operation.ts) compiled into a dispatcher (dispatch.ts) that
 * authenticates everything under /v1 except the OpenAPI document and answers its own errors as
 * problem+json; Express only answers what the dispatcher does not serve (404 outside /v1). Every response
 * is written by the responder (respond.ts), which adds the security headers.
 */
import type { RequestListener } from 'node:http';
import type { Duplex } from 'node:stream';
import express, { type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { AuditLog } from '../audit/audit-log.js';
import type { FailureSummary } from '../audit/failure-summary.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { FailureRate } from '../auth/failure-rate.js';
import { AppError } from '../errors.js';
import type { CofferMetrics } from '../observe/metrics.js';
import { authenticate } from './authenticate.js';
import { clientAddressOf } from './client-address.js';
import { clientErrorListener } from './client-errors.js';
import { consoleFiles } from './console-static.js';
import { dispatcher } from './dispatch.js';
import { InFlight } from './in-flight.js';
import { type OutcomeSink, outcomeWatcher } from './outcome.js';
import { type IntegrityReport, notFoundHandler, problemHandler } from './problem.js';
import {
  intentRecorder,
  refuseWhileUnrecorded,
  requestAuditor,
  unrecorded,
} from './request-audit.js';
import { jsonBodyReader } from './request-parts.js';
import { createResponder } from './respond.js';
import { type RouteDeps, routeTable } from './route-table.js';
import { Tarpit } from './tarpit.js';
import { Validators } from './validate.js';

/** The routes' collaborators (route-table.ts), and what the listener itself needs. */
export interface HttpAppDeps extends Omit<RouteDeps, 'respond' | 'recordIntent' | 'loginGate'> {
  readonly authenticator: Authenticator;
  readonly log: Logger;
  readonly maxValueBytes: number;
  readonly onOutcome?: OutcomeSink;
  /** Told of every stored record that failed its check while serving (logged and audited). */
  readonly onIntegrityError: IntegrityReport;
  /** When set, every response waits for its audit entry to be durable (fail closed). */
  readonly audit?: AuditLog;
  readonly now: () => number;
  /** Tells a flood of failed authentications from ordinary ones. */
  readonly failureRate: FailureRate;
  /** Where failed authentications past the flood rate are counted, instead of a line each. */
  readonly failureSummary?: FailureSummary;
  /** Served over TLS: only then is Strict-Transport-Security sent. */
  readonly tls: boolean;
  /** Reverse proxies whose X-Forwarded-For names the client (config trusted_proxies). */
  readonly trustedProxies: readonly string[];
  /** How long a whole request may take (COFFER_REQUEST_TIMEOUT), for the 408's detail. */
  readonly requestTimeoutSeconds: number;
  /** Where every answer and every audit entry's write time is counted. */
  readonly metrics?: CofferMetrics;
}

/** What the HTTP server is given: the request listener, and the answers to what Node cannot parse. */
export interface HttpApp {
  readonly listener: RequestListener;
  /** The requests being worked on: a stop waits for them before closing the audit log and the store. */
  readonly inFlight: InFlight;
  readonly onClientError: (err: NodeJS.ErrnoException, socket: Duplex) => void;
}

/** Room for the JSON around a value: the worst case escapes each byte as \u00XX (6 bytes). */
export function bodyLimit(maxValueBytes: number): number {
  return maxValueBytes * 6 + 16 * 1024;
}

export function buildHttpApp(deps: HttpAppDeps): HttpApp {
  const { audit } = deps;
  const { metrics } = deps;
  const inFlight = new InFlight();
  const respond = createResponder(
    audit ? requestAuditor(audit, deps.failureSummary, deps.now) : undefined,
    deps.tls,
    audit ? () => unrecorded(audit) : undefined,
    metrics && {
      sent(res, status) {
        const started = res.locals.startedAt;
        metrics.answered(
          res.locals.audit?.action ?? res.locals.action ?? 'none',
          status,
          started === undefined ? 0 : (performance.now() - started) / 1000,
        );
      },
      audited: (seconds) => metrics.auditWrite.observe(seconds),
    },
    inFlight,
  );
  const recordIntent = intentRecorder(deps.audit, respond.requestId);

  const tarpit = new Tarpit();
  const addressOf = (req: Request, res: Response): string =>
    res.locals.client ?? req.socket.remoteAddress ?? '';
  const loginGate = {
    // A refused login past the failure rate of its address is held back and summarized, as a refused token is.
    async refused(req: Request, res: Response): Promise<void> {
      if (deps.failureRate.admit(addressOf(req, res), deps.now())) return;
      res.locals.summarized = true;
      await tarpit.hold();
    },
    // While the address is past that rate, a login is refused (429) before its JWT is even parsed: a flood of
    // bad JWTs costs the server no verification, and the address's well-behaved logins retry after a while.
    async before(req: Request, res: Response): Promise<void> {
      const wait = deps.failureRate.floodingFor(addressOf(req, res), deps.now());
      if (wait === 0) return;
      res.locals.summarized = true;
      await tarpit.hold();
      throw new AppError(
        'too_many_requests',
        'too many refused logins from this address; retry later',
        undefined,
        { 'Retry-After': String(wait) },
      );
    },
  };
  const operations = routeTable({ ...deps, respond, recordIntent, loginGate });

  const problems = problemHandler(deps.log, respond, deps.onIntegrityError);
  const answerError = (err: unknown, req: Request, res: Response): void =>
    problems(err, req, res, () => undefined);
  const dispatch = dispatcher(operations, {
    authenticate: authenticate(
      deps.authenticator,
      tarpit,
      deps.failureRate,
      deps.now,
      deps.consoleCookies,
    ),
    protectedPrefix: '/v1/',
    clientAddress: clientAddressOf(deps.trustedProxies),
    onError: answerError,
    readBody: jsonBodyReader(bodyLimit(deps.maxValueBytes)),
    validators: new Validators(),
    inFlight,
    ...(deps.audit ? { guard: refuseWhileUnrecorded(deps.audit) } : {}),
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', false); // queries are read strictly by request-parts.ts
  // The server's own address opens the web console.
  app.get('/', (_req, res) => respond.empty(res, 302, [['Location', '/ui/']]));
  app.use('/ui', consoleFiles(deps.tls));
  app.use(notFoundHandler);
  app.use(problems);

  // The response each connection is serving: a request whose body does not arrive in time is answered
  // 408 through it (client-errors.ts). A connection's next request replaces it.
  const serving = new WeakMap<Duplex, Response>();
  const onClientError = clientErrorListener({
    inFlight: serving,
    respond,
    tls: deps.tls,
    requestTimeoutSeconds: deps.requestTimeoutSeconds,
    log: deps.log,
  });
  // Coffer's own routes are served straight from Node's request, without Express's per-request set-up (its
  // router walk, the prototype swaps of req and res): the dispatcher needs only originalUrl and locals.
  // Whatever it does not serve (paths outside /v1/) goes on to Express, for the same 404. Tests that watch
  // outcomes (deps.onOutcome) take this same path.
  const watch = deps.onOutcome === undefined ? undefined : outcomeWatcher(deps.onOutcome);
  const listener: RequestListener = (req, res) => {
    const request = req as Request;
    const response = res as Response;
    request.originalUrl = req.url ?? '/';
    response.locals = Object.create(null) as Response['locals'];
    serving.set(req.socket, response);
    watch?.(request, response);
    try {
      dispatch(request, response, () => app(req, res));
    } catch (err) {
      answerError(err, request, response);
    }
  };
  return { listener, onClientError, inFlight };
}
