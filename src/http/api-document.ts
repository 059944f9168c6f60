/**
 * The OpenAPI document of this build, without a server: the route table's declarations, which are what the
 * server publishes at GET /v1/openapi.json (test/http/openapi.test.ts holds the two equal). For client
 * generators (`coffer openapi` prints it; `npm run docs:openapi` writes docs/openapi.json) and for the tests' response checker.
 *
 * The route records are built with nothing behind them: only their declarations are read here, and a
 * handler that ran would fail on its first use of a collaborator instead of serving anything.
 */
import { openApiDocument } from './openapi.js';
import { type RouteDeps, routeTable } from './route-table.js';

const nothingServed: never = new Proxy(
  {},
  {
    get() {
      throw new Error('the document of a build serves no request');
    },
  },
) as never;

export function apiDocument(maxTtl: number): object {
  const deps: RouteDeps = {
    kv: nothingServed,
    tokens: nothingServed,
    login: nothingServed,
    oidc: nothingServed,
    consoleCookies: nothingServed,
    consoleIdleTimeoutSeconds: 900,
    tls: false,
    secureCookies: false,
    publicUrl: null,
    now: Date.now,
    metricsText: nothingServed,
    roles: nothingServed,
    loginGate: nothingServed,
    sys: { rewrapper: nothingServed, operations: nothingServed },
    snapshots: null,
    health: nothingServed,
    review: nothingServed,
    maxTtl,
    respond: nothingServed,
    recordIntent: nothingServed,
  };
  return openApiDocument(routeTable(deps));
}

/** The document as `coffer openapi` prints it and docs/openapi.json holds it (with the default max_ttl). */
export function documentText(maxTtl: number): string {
  return `${JSON.stringify(apiDocument(maxTtl), null, 2)}\n`;
}
