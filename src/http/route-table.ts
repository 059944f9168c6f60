/**
 * Every operation Coffer serves, each declared once with its privilege, schemas and documentation
 * (routes/*.ts), with the operation that serves their OpenAPI document first. buildHttpApp serves this list;
 * api-document.ts reads the same list for the document of a build.
 */

import type { JwtLogin } from '../auth/jwt-login.js';
import type { OidcLogin } from '../auth/oidc-login.js';
import type { RoleAdmin } from '../auth/role-admin.js';
import type { TokenService } from '../auth/token-service.js';
import type { KvService } from '../kv/kv-service.js';
import type { AuditReview } from '../operator/audit-review.js';
import type { ConsoleCookies } from './console-cookie.js';
import { withOpenApiDocument } from './openapi.js';
import type { Operation } from './operation.js';
import type { RecordIntent } from './request-audit.js';
import type { Responder } from './respond.js';
import { auditOperations } from './routes/audit.js';
import { authOperations } from './routes/auth.js';
import { consoleOperations } from './routes/console.js';
import { consoleOidcOperations } from './routes/console-oidc.js';
import { type HealthRouteDeps, healthOperations } from './routes/health.js';
import { kvOperations } from './routes/kv.js';
import { type LoginGate, loginOperations } from './routes/login.js';
import { metricsOperations } from './routes/metrics.js';
import { roleOperations } from './routes/roles.js';
import { type SnapshotRouteDeps, snapshotOperations } from './routes/snapshots.js';
import { type SysRouteDeps, sysOperations } from './routes/sys.js';

export interface RouteDeps {
  readonly kv: KvService;
  readonly tokens: TokenService;
  readonly login: JwtLogin;
  readonly oidc: OidcLogin;
  /** The web console's sessions and their cookie. */
  readonly consoleCookies: ConsoleCookies;
  readonly consoleIdleTimeoutSeconds: number;
  /** The server's metrics as Prometheus text (summed over its workers). */
  readonly metricsText: () => Promise<string>;
  /** Served over TLS (Strict-Transport-Security is sent then). */
  readonly tls: boolean;
  /** The browser reaches Coffer over HTTPS (its own TLS, or behind a proxy: an https public_url). */
  readonly secureCookies: boolean;
  /** COFFER_PUBLIC_URL: the address people reach Coffer at, when set. */
  readonly publicUrl: string | null;
  readonly now: () => number;
  readonly roles: RoleAdmin;
  /** Refuses logins from an address past its failure rate, and holds back refused ones. */
  readonly loginGate: LoginGate;
  readonly sys: Omit<SysRouteDeps, 'respond'>;
  /** The scheduled snapshots, when the server takes them. */
  readonly snapshots: SnapshotRouteDeps['schedule'];
  readonly health: HealthRouteDeps['health'];
  readonly review: AuditReview;
  /** The longest lifetime a token may be given (seconds), for the token-creation schema. */
  readonly maxTtl: number;
  readonly respond: Responder;
  readonly recordIntent: RecordIntent;
}

export function routeTable(deps: RouteDeps): Operation[] {
  const { respond, recordIntent } = deps;
  return withOpenApiDocument(
    [
      ...kvOperations({ kv: deps.kv, respond, recordIntent }),
      ...authOperations({
        tokens: deps.tokens,
        maxTtl: deps.maxTtl,
        respond,
        recordIntent,
      }),
      ...loginOperations({
        login: deps.login,
        oidc: deps.oidc,
        loginGate: deps.loginGate,
        respond,
        recordIntent,
      }),
      ...consoleOperations({
        cookies: deps.consoleCookies,
        loginGate: deps.loginGate,
        idleTimeoutSeconds: deps.consoleIdleTimeoutSeconds,
        tokens: deps.tokens,
        respond,
        recordIntent,
      }),
      ...consoleOidcOperations({
        cookies: deps.consoleCookies,
        oidc: deps.oidc,
        loginGate: deps.loginGate,
        respond,
        recordIntent,
        secure: deps.secureCookies,
        publicUrl: deps.publicUrl,
        now: deps.now,
      }),
      ...sysOperations({ ...deps.sys, respond }),
      ...roleOperations({ roles: deps.roles, maxTtl: deps.maxTtl, respond }),
      ...snapshotOperations({ schedule: deps.snapshots, now: deps.now, respond }),
      ...metricsOperations({ metricsText: deps.metricsText, respond }),
      ...healthOperations({ health: deps.health, respond }),
      ...auditOperations({ review: deps.review, respond }),
    ],
    respond,
  );
}
