/**
 * The Express application: security headers, authentication for everything under /v1 except the
 * OpenAPI document, one table of routes, 405 with Allow for known paths, 404 for the rest, and one
 * problem+json error handler. Express 5 forwards rejected promises from handlers to that handler.
 */
import express, { type Express, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Authenticator } from '../auth/authenticator.js';
import type { TokenService } from '../auth/token-service.js';
import type { KvService } from '../kv/kv-service.js';
import { authenticate } from './authenticate.js';
import { openApiDocument } from './openapi.js';
import { recordOutcomes, type OutcomeSink } from './outcome.js';
import { methodNotAllowed, notFoundHandler, problemHandler } from './problem.js';
import { jsonBodyReader } from './request-parts.js';
import { authRoutes } from './routes/auth.js';
import { kvRoutes } from './routes/kv.js';
import { kvPutSchema, tokenCreateSchema } from './schemas.js';
import { securityHeaders } from './security-headers.js';
import { Validators } from './validate.js';

export interface HttpAppDeps {
  readonly authenticator: Authenticator;
  readonly tokens: TokenService;
  readonly kv: KvService;
  readonly log: Logger;
  readonly maxValueBytes: number;
  readonly maxTtl: number;
  readonly onOutcome?: OutcomeSink;
}

type Method = 'get' | 'put' | 'post' | 'delete';
type Handler = (req: Request, res: Response) => void | Promise<void>;

/** Room for the JSON around a value: the worst case escapes each byte as \u00XX (6 bytes). */
export function bodyLimit(maxValueBytes: number): number {
  return maxValueBytes * 6 + 16 * 1024;
}

export function buildHttpApp(deps: HttpAppDeps): Express {
  const validators = new Validators();
  const readBody = jsonBodyReader(bodyLimit(deps.maxValueBytes));
  const kv = kvRoutes({ kv: deps.kv, readBody, validatePut: validators.body(kvPutSchema) });
  const auth = authRoutes({ tokens: deps.tokens, readBody, validateCreate: validators.body(tokenCreateSchema(deps.maxTtl)) });
  const openapi = JSON.stringify(openApiDocument(deps.maxTtl));

  const routes: readonly (readonly [Method, string, Handler])[] = [
    ['get', '/v1/auth/me', auth.me],
    ['post', '/v1/auth/token', auth.create],
    ['get', '/v1/auth/tokens', auth.list],
    ['delete', '/v1/auth/token/:token', auth.revoke],
    ['get', '/v1/kv{/*path}', kv.get],
    ['put', '/v1/kv{/*path}', kv.put],
    ['delete', '/v1/kv{/*path}', kv.remove],
  ];

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', false); // queries are read strictly by request-parts.ts
  app.use(securityHeaders());
  if (deps.onOutcome) app.use(recordOutcomes(deps.onOutcome));
  app.get('/v1/openapi.json', (_req, res) => void res.type('application/json').send(openapi));
  app.use('/v1', authenticate(deps.authenticator));
  for (const [method, path, handler] of routes) app[method](path, handler);
  const methodsByPath = new Map<string, Method[]>();
  for (const [method, path] of routes) methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), method]);
  for (const [path, methods] of methodsByPath) {
    app.all(path, methodNotAllowed(methods.includes('get') ? [...methods, 'head'] : methods));
  }
  app.all('/v1/openapi.json', methodNotAllowed(['get', 'head']));
  app.use(notFoundHandler);
  app.use(problemHandler(deps.log));
  return app;
}
