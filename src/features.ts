/**
 * The features a server mounts (api/feature.ts), in the order they open, and the OpenAPI document of a
 * build made from their declarations: what the server publishes at GET /v1/openapi.json
 * (test/http/openapi.test.ts holds the two equal), for client generators (`coffer openapi` prints it;
 * `npm run docs:openapi` writes docs/openapi.json) and for the tests' response checker.
 */
import {
  type Feature,
  type Mounted,
  mount,
  type RouteContext,
  type ServerContext,
} from './api/feature.js';
import { openApiDocument, withOpenApiDocument } from './api/openapi.js';
import type { Operation } from './api/operation.js';
import { type AuthServices, authFeature } from './auth/module.js';
import { type CofferConfig, configDefaults } from './config/schema.js';
import { kvFeature } from './kv/module.js';
import { observeFeature } from './observe/module.js';
import { operatorFeature } from './operator/module.js';

export const FEATURES = [kvFeature, authFeature, operatorFeature, observeFeature] as const;

/**
 * What a declaration is given in place of a service when the document is built without a server: any
 * property of it is again such a stand-in, and calling one fails, as a handler that ran would.
 */
const nothingServed: never = new Proxy(() => undefined, {
  get: () => nothingServed,
  apply() {
    throw new Error('the document of a build serves no request');
  },
}) as never;

/** Every operation of the features, with the one that serves their document first. */
function allOperations(
  operationsOf: (feature: Feature<never>) => Operation[],
  respond: RouteContext['respond'],
): Operation[] {
  return withOpenApiDocument(
    FEATURES.flatMap((feature) => operationsOf(feature as Feature<never>)),
    respond,
  );
}

/**
 * Opens every feature in order (each one opened is added to `opened` at once, so that a start that fails
 * later closes it). The request pipeline takes their operations, and the auth feature's authentication.
 */
export async function openFeatures(
  ctx: ServerContext,
  opened: Mounted[],
): Promise<{ operations: (route: RouteContext) => Operation[]; auth: AuthServices }> {
  const byFeature = new Map<Feature<never>, Mounted>();
  let auth: AuthServices | undefined;
  for (const feature of FEATURES) {
    const mounted = await mount<unknown>(feature as Feature<unknown>, ctx);
    opened.push(mounted);
    byFeature.set(feature as Feature<never>, mounted);
    if (feature === authFeature) auth = mounted.services as AuthServices;
  }
  return {
    operations: (route) => allOperations((f) => byFeature.get(f)!.operations(route), route.respond),
    auth: auth!,
  };
}

export function apiDocument(maxTtl: number): object {
  const config = { ...configDefaults(), max_ttl: maxTtl } as unknown as CofferConfig;
  const route: RouteContext = {
    config,
    respond: nothingServed,
    recordIntent: nothingServed,
    now: Date.now,
  };
  return openApiDocument(
    allOperations((feature) => feature.operations(nothingServed, route), nothingServed),
  );
}

/** The document as `coffer openapi` prints it and docs/openapi.json holds it (with the default max_ttl). */
export function documentText(maxTtl: number): string {
  return `${JSON.stringify(apiDocument(maxTtl), null, 2)}\n`;
}
