/**
 * The auth feature: tokens (routes/tokens.ts), JWT and OIDC logins (routes/login.ts), login roles
 * (routes/roles.ts) and the web console's sessions (routes/console*.ts); and what the request pipeline
 * asks of it, the authentication of every request under /v1 (routes/authenticate.ts). It also tidies
 * what it keeps: expired tokens and ended console sessions.
 */
import type { Authenticate, Feature } from '../api/feature.js';
import { parseDuration } from '../operator/auto-rotate.js';
import { startTidy, type Tidy } from '../operator/tidy.js';
import { followChanges } from '../startup/follow-changes.js';
import { Argon2Gate } from './argon2-gate.js';
import { Authenticator } from './authenticator.js';
import { ConsoleSessions } from './console-sessions.js';
import { FailureLimiter } from './failure-limiter.js';
import { FailureRate } from './failure-rate.js';
import { JwtLogin } from './jwt-login.js';
import { KeySets } from './key-sets.js';
import { OidcLogin } from './oidc-login.js';
import { PrincipalFactory } from './principal.js';
import { RoleAdmin } from './role-admin.js';
import { CurrentRoot } from './root-token.js';
import { authenticate } from './routes/authenticate.js';
import { consoleOperations } from './routes/console.js';
import { ConsoleCookies } from './routes/console-cookie.js';
import { consoleOidcOperations } from './routes/console-oidc.js';
import { loginOperations } from './routes/login.js';
import { loginGate } from './routes/login-gate.js';
import { roleOperations } from './routes/roles.js';
import { Tarpit } from './routes/tarpit.js';
import { tokenOperations } from './routes/tokens.js';
import { vaultTokenOperations } from './routes/vault-token.js';
import { TokenService } from './token-service.js';

/** Change events deleted in one transaction by the tidy run. */
const EVENTS_PRUNED_AT_ONCE = 1000;
export interface AuthServices {
  readonly tokens: TokenService;
  readonly roles: RoleAdmin;
  readonly login: JwtLogin;
  readonly oidc: OidcLogin;
  readonly cookies: ConsoleCookies;
  readonly loginGate: ReturnType<typeof loginGate>;
  /** Tells a flood of failed authentications from ordinary ones (the request pipeline asks too). */
  readonly failureRate: FailureRate;
  /** Authenticates a request under /v1 (the pipeline calls it before any handler that needs a caller). */
  readonly authenticate: Authenticate;
  readonly tidy: Tidy;
  /** After the keyring changed: takes a root token another process changed. */
  followRoot(): Promise<void>;
}

export const authFeature: Feature<AuthServices> = {
  name: 'auth',
  async open({ config, options, store, records, keyring, root, events, log, now, secureCookies }) {
    const argon2 = new Argon2Gate();
    const principals = new PrincipalFactory(config.roles, await records.policies.current());
    const roles = new RoleAdmin({
      policies: records.policies,
      tokens: records.tokens,
      principals,
      events,
      defaultTtl: config.default_ttl,
      maxTtl: config.max_ttl,
      now,
    });
    const refreshPolicies = () => roles.refresh();
    const currentRoot = new CurrentRoot(root, records.rootToken, keyring);
    const { burst, per_second: perSecond } = config.auth_failures;
    const authenticator = new Authenticator({
      tokens: records.tokens,
      argon2,
      principals,
      root: () => currentRoot.get(),
      now,
      refreshPolicies,
      limiter: new FailureLimiter({ burst, perSecond }),
    });
    const tokens = new TokenService({
      store: records.tokens,
      argon2,
      principals,
      root: () => currentRoot.get(),
      defaultTtl: config.default_ttl,
      maxTtl: config.max_ttl,
      now,
      events,
      refreshPolicies,
    });
    // Roles changed by another worker or server apply here within a quarter second (at once on PostgreSQL).
    const policyFollower = followChanges({
      read: refreshPolicies,
      onChange: (listener) => store.onPoliciesChange(listener),
      everyMs: 250,
      log,
      what: 'the roles',
    });
    const { login: logins } = config;
    const login = new JwtLogin({
      principals,
      keySets: new KeySets({
        refreshMs: logins.jwks_refresh_seconds * 1000,
        minRefreshMs: logins.jwks_min_refresh_seconds * 1000,
        maxStaleMs: logins.jwks_max_stale_seconds * 1000,
        timeoutMs: logins.fetch_timeout_ms,
        maxBytes: 1024 * 1024,
        now,
      }),
      tokens,
      maxJwtBytes: logins.max_jwt_bytes,
      leewaySeconds: logins.leeway_seconds,
      now,
    });
    const oidc = new OidcLogin({
      principals,
      jwtLogin: login,
      timeoutMs: logins.fetch_timeout_ms,
      maxBytes: 1024 * 1024,
      refreshMs: logins.jwks_refresh_seconds * 1000,
      now,
    });
    const sessions = new ConsoleSessions({
      records: records.consoleSessions,
      authenticator,
      root: () => currentRoot.get(),
      idleMs: config.console.idle_timeout_seconds * 1000,
      maxLifetimeMs: config.console.max_lifetime_seconds * 1000,
      now,
    });
    const cookies = new ConsoleCookies(sessions, secureCookies);
    const { flood_burst, flood_per_second } = config.auth_failures;
    const failureRate = new FailureRate(
      { burst: flood_burst, perSecond: flood_per_second },
      { burst: flood_burst * 10, perSecond: flood_per_second * 10 },
    );
    const tarpit = new Tarpit();
    const tidy = startTidy({
      purgeTokens: (before) => records.tokens.purgeExpired(before),
      purgeConsoleSessions: () => sessions.purgeEnded(),
      purgeEvents: async (before) => {
        let purged = 0;
        for (let batch = EVENTS_PRUNED_AT_ONCE; batch === EVENTS_PRUNED_AT_ONCE; purged += batch)
          batch = await records.events.prune(before, EVENTS_PRUNED_AT_ONCE);
        return purged;
      },
      retentionMs: parseDuration(config.token_retention)!,
      eventsRetentionMs: parseDuration(config.events_retention)!,
      everyMs: options.tidyEveryMs ?? 3_600_000,
      events,
      now,
    });
    return {
      services: {
        tokens,
        roles,
        login,
        oidc,
        cookies,
        failureRate,
        loginGate: loginGate(failureRate, tarpit, now),
        authenticate: authenticate(authenticator, tarpit, failureRate, now, cookies),
        tidy,
        async followRoot() {
          if (!(await currentRoot.follow())) return;
          authenticator.rootChanged();
          log.info('the root token was changed by another process; using the new one');
        },
      },
      async close() {
        policyFollower.stop();
        await tidy.stop();
      },
    };
  },
  operations(auth, route) {
    const { config, respond, recordIntent, now } = route;
    const { tokens, loginGate, cookies, oidc } = auth;
    const maxTtl = config.max_ttl;
    return [
      ...tokenOperations({ tokens, maxTtl, respond, recordIntent }),
      ...vaultTokenOperations({ tokens, respond, recordIntent, now }),
      ...loginOperations({ login: auth.login, oidc, loginGate, respond, recordIntent }),
      ...consoleOperations({
        cookies,
        loginGate,
        idleTimeoutSeconds: config.console.idle_timeout_seconds,
        tokens,
        respond,
        recordIntent,
      }),
      ...consoleOidcOperations({
        cookies,
        oidc,
        loginGate,
        respond,
        recordIntent,
        publicUrl: config.public_url?.replace(/\/$/, '') ?? null,
        now,
      }),
      ...roleOperations({ roles: auth.roles, maxTtl, respond }),
    ];
  },
};
