/**
 * Every setting, declared once: its name in the configuration, type and bounds, default, `COFFER_*`
 * variable and help text. The TypeScript type (CofferConfig), the schema ajv checks, the defaults the loader
 * starts from, the variables it reads, `coffer help settings`, the table in docs/configuration.md and
 * config/default.json (both checked by a test) are all made from this file. The master key providers
 * declare theirs in their own file (keys/registry.ts); the storage backends theirs in storage/registry.ts.
 *
 * A leaf's `env` names its variable; `envOnly` says it may not come from a configuration file, and why.
 */
import { type Static, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import type { RoleTable } from '../auth/roles.js';
import { type KeyProviderSettings, PROVIDER_NAMES } from '../keys/registry.js';
import { ACTIONS } from '../model/policies.js';
import { VALUE_TYPES } from '../model/value-types.js';
import { STORAGE_NAMES, STORAGE_SETTINGS, type StorageName } from '../store/store.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const;

/** What a leaf says about itself besides its JSON schema. */
export interface SettingNotes {
  /** The environment variable that sets it. */
  readonly env?: string;
  /** One line for the docs table and `coffer help settings`. */
  readonly description: string;
  /** Set when it may come only from the environment: the sentence refusing it in a file. */
  readonly envOnly?: string;
  /** How the docs show the default when it is not a value (`<data dir>/audit`). */
  readonly shownDefault?: string;
  /** A path on the server: the loader makes a relative one absolute, from the directory it starts in. */
  readonly path?: true;
}

/** One of `values`, kept as `enum` so a refusal lists them. */
function oneOf<const V extends readonly string[]>(
  values: V,
  notes: SettingNotes & { default?: V[number] },
) {
  return Type.Unsafe<V[number]>({ enum: [...values], ...notes });
}

/** A string, or null for "not set". */
function optionalString(notes: SettingNotes & { pattern?: string }) {
  return Type.Unsafe<string | null>({
    type: ['string', 'null'],
    minLength: 1,
    default: null,
    ...notes,
  });
}

/** A group of settings (an object in the configuration file), with nothing else in it. */
function group<P extends TProperties>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

const INTERVAL = '^[1-9][0-9]{0,5}[smhd]$';

const ruleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['namespaces', 'actions', 'types'],
  properties: {
    namespaces: { type: 'array', minItems: 1, items: { type: 'string' } },
    actions: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...ACTIONS] } },
    types: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: [...VALUE_TYPES] } },
  },
} as const;

/** The settings of Coffer itself, in the order the docs list them. */
export const CoreSettings = Type.Object(
  {
    host: Type.String({
      minLength: 1,
      default: '127.0.0.1',
      env: 'COFFER_HOST',
      description: 'address to listen on',
    }),
    port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 8750,
      env: 'COFFER_PORT',
      description: 'port (0 = any free port)',
    }),
    workers: Type.Integer({
      minimum: 0,
      maximum: 256,
      default: 0,
      env: 'COFFER_WORKERS',
      description: 'server processes; 0 = one per CPU. They share the socket and the store',
    }),
    data_dir: Type.String({
      minLength: 1,
      default: './data',
      path: true,
      env: 'COFFER_DATA_DIR',
      description: 'where the LMDB store lives (`<dir>/lmdb`) and, by default, the audit log',
    }),
    storage: oneOf(STORAGE_NAMES, {
      default: 'lmdb',
      env: 'COFFER_STORAGE',
      description:
        '`lmdb` (embedded, in the data directory) or `postgres` (one database shared by several servers: [deployment](deployment.md))',
    }),
    ...STORAGE_SETTINGS,
    key_provider: oneOf(PROVIDER_NAMES, {
      default: 'local',
      env: 'COFFER_KEY_PROVIDER',
      description:
        "`local` (key file or passphrase), `aws-kms` or `pkcs11` ([key management](key-management.md), where each provider's settings are listed)",
    }),
    root_token: Type.Optional(
      Type.String({
        minLength: 1,
        env: 'COFFER_ROOT_TOKEN',
        envOnly: 'root_token may only come from COFFER_ROOT_TOKEN',
        description:
          'the root token; its argon2id hash replaces the stored one at start-up. Unset on first start: one is generated and printed once. At least 32 characters and 16 different ones',
      }),
    ),
    keyring: group({
      rotate_after: optionalString({
        pattern: INTERVAL,
        env: 'COFFER_KEYRING_ROTATE_AFTER',
        description:
          'automatic rotation: rotate when the active keyring version is this old (`90d`, `12h`, `30m`, `45s`)',
      }),
    }),
    snapshot: group({
      dir: optionalString({
        path: true,
        env: 'COFFER_SNAPSHOT_DIR',
        description:
          'scheduled snapshots, taken by the server while it serves, go here (`coffer-snapshot-<interval start>.snap`, owner-only, written whole or not at all; servers sharing it take one per interval between them); needs `COFFER_SNAPSHOT_EVERY` ([deployment](deployment.md))',
      }),
      every: optionalString({
        pattern: INTERVAL,
        env: 'COFFER_SNAPSHOT_EVERY',
        description:
          'one scheduled snapshot per interval (`30m`, `6h`, `1d`; intervals counted from the epoch); needs `COFFER_SNAPSHOT_DIR`',
      }),
      keep: Type.Integer({
        minimum: 1,
        maximum: 10_000,
        default: 7,
        env: 'COFFER_SNAPSHOT_KEEP',
        description: 'scheduled snapshots kept: the newest this many',
      }),
    }),
    audit: group({
      dir: optionalString({
        path: true,
        env: 'COFFER_AUDIT_DIR',
        shownDefault: '`<data dir>/audit`',
        description:
          "the audit log's directory ([audit](audit.md)): chained JSON lines, each in the file before its response, and a change's intent committed with the change",
      }),
      stdout: Type.Boolean({
        default: false,
        env: 'COFFER_AUDIT_STDOUT',
        description: 'also copy audit lines to stdout',
      }),
      streams: optionalString({
        env: 'COFFER_AUDIT_STREAMS',
        description:
          "audit streams: every line of every chain, checkpoints included, also sent to each of these, in order, resumed after an outage — a comma-separated list of `syslog+tcp://host:port`, `syslog+tls://host:port` (`?ca=FILE`), `https://…` (NDJSON batches; `?bearer_file=FILE` or `?header_file=FILE`), `http://127.0.0.1:port/…` and `stdout:`; `?required=true` holds each answer until that stream has its line, `?name=` names it; with any stream, a change's answer goes out under a signed checkpoint (a seal), a read's line is sealed within `sync_ms` ([audit](audit.md#audit-streams))",
      }),
      fail_open: Type.Boolean({
        default: false,
        env: 'COFFER_AUDIT_FAIL_OPEN',
        description:
          'serve requests even when the audit log cannot be written (development only; otherwise 503 `audit_unavailable`)',
      }),
      checkpoint_every: Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        default: 1000,
        env: 'COFFER_AUDIT_CHECKPOINT_EVERY',
        description: 'lines between signed checkpoints',
      }),
      checkpoint_seconds: Type.Number({
        exclusiveMinimum: 0,
        maximum: 86_400,
        default: 10,
        description:
          'seconds between signed checkpoints while lines are written (configuration file only)',
      }),
      max_file_bytes: Type.Integer({
        minimum: 4096,
        default: 67_108_864,
        env: 'COFFER_AUDIT_MAX_FILE_BYTES',
        description: 'size at which a chain continues in a new file',
      }),
      min_free_bytes: Type.Integer({
        minimum: 0,
        default: 1_073_741_824,
        env: 'COFFER_AUDIT_MIN_FREE_BYTES',
        description:
          'below this much free space for the audit directory a `disk.low` warning is logged (then every 10 minutes): a full disk makes the fail-closed log refuse every request. Move old files away with `coffer audit archive`',
      }),
      sync_ms: Type.Integer({
        minimum: 1,
        maximum: 1000,
        default: 50,
        env: 'COFFER_AUDIT_SYNC_MS',
        description:
          "request lines are in the audit file before their answer and on disk within this many ms (a change's intent line is committed with the change, in one sync)",
      }),
      sync_every_entry: Type.Boolean({
        default: false,
        env: 'COFFER_AUDIT_SYNC_EVERY_ENTRY',
        description:
          "make every answer wait for its line's sync ([what a crash can lose](audit.md))",
      }),
    }),
    default_ttl: Type.Integer({
      minimum: 1,
      default: 86_400,
      env: 'COFFER_DEFAULT_TTL',
      description: 'token lifetime in seconds when `expires_in` is omitted',
    }),
    token_retention: Type.String({
      pattern: INTERVAL,
      default: '7d',
      env: 'COFFER_TOKEN_RETENTION',
      description:
        "how long a token's record is kept after the token expired (listed by `GET /v1/auth/tokens?all=true`) before the hourly tidy deletes it (`7d`, `12h`); ended web console sessions are deleted then too",
    }),
    events_retention: Type.String({
      pattern: INTERVAL,
      default: '7d',
      env: 'COFFER_EVENTS_RETENTION',
      description:
        'how long the event log keeps each change event (`GET /v1/events` resumes from within it; an older position is 410) before the hourly tidy deletes it (`7d`, `12h`)',
    }),
    webhooks_allow_private: Type.Boolean({
      default: false,
      env: 'COFFER_WEBHOOKS_ALLOW_PRIVATE',
      description:
        'let webhooks reach loopback, private, link-local and reserved addresses (refused by default: a webhook would otherwise reach what only the server can, a cloud metadata service say)',
    }),
    max_ttl: Type.Integer({
      minimum: 1,
      default: 31_536_000,
      env: 'COFFER_MAX_TTL',
      description: 'the largest `expires_in` accepted',
    }),
    max_value_bytes: Type.Integer({
      minimum: 1,
      maximum: 64 * 1024 * 1024,
      default: 1_048_576,
      env: 'COFFER_MAX_VALUE_BYTES',
      description: 'the largest value, in UTF-8 bytes (413 above it)',
    }),
    max_waits: Type.Integer({
      minimum: 0,
      maximum: 100_000,
      default: 1000,
      env: 'COFFER_MAX_WAITS',
      description:
        'requests each server process holds while they wait for a change (`wait_after`, or `If-None-Match` with `timeout`), each open change stream (`GET /v1/events`) counted among them; one more is 429 with Retry-After. One token holds at most a quarter of them, one client address at most half (each at least one). 0: no waits and no streams',
    }),
    request_timeout_seconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 30,
      env: 'COFFER_REQUEST_TIMEOUT',
      description:
        'seconds a client may take to send a whole request (the headers: at most 10 s of it); then 408 and the connection is closed',
    }),
    tls: group({
      cert: optionalString({
        path: true,
        env: 'COFFER_TLS_CERT',
        description: 'PEM certificate file; with `COFFER_TLS_KEY` Coffer serves HTTPS',
      }),
      key: optionalString({
        path: true,
        env: 'COFFER_TLS_KEY',
        description: 'PEM private key file; with `COFFER_TLS_CERT` Coffer serves HTTPS',
      }),
    }),
    log_level: oneOf(LOG_LEVELS, {
      default: 'info',
      env: 'COFFER_LOG_LEVEL',
      description: 'the least severe log line written (JSON lines on stdout)',
    }),
    auth_failures: group({
      burst: Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        default: 100,
        env: 'COFFER_AUTH_FAILURE_BURST',
        description:
          'wrong secrets of a known token allowed at once per client address, token and worker; beyond the burst and rate, 429 (held back a second). Failures that cost no argon2 (no or malformed token, unknown id, expired, revoked) are always 401 and never counted',
      }),
      per_second: Type.Number({
        exclusiveMinimum: 0,
        maximum: 1_000_000,
        default: 2,
        env: 'COFFER_AUTH_FAILURE_RATE',
        description: 'wrong secrets of a known token allowed per second after the burst',
      }),
      flood_burst: Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        default: 20,
        env: 'COFFER_AUTH_FLOOD_BURST',
        description:
          'failed authentications per client address and worker (ten times that over all addresses) past which they are a flood: each still answers 401 (or 429), held back a second, and they are audited as one `auth.failures` entry per address every 10 s; a JWT login from an address past it is answered 429 before its JWT is read',
      }),
      flood_per_second: Type.Number({
        exclusiveMinimum: 0,
        maximum: 1_000_000,
        default: 5,
        env: 'COFFER_AUTH_FLOOD_RATE',
        description: 'failed authentications per second after the flood burst',
      }),
    }),
    login: group({
      max_jwt_bytes: Type.Integer({
        minimum: 1024,
        maximum: 1_048_576,
        default: 16_384,
        env: 'COFFER_LOGIN_MAX_JWT_BYTES',
        description:
          'the largest JWT POST /v1/auth/login/jwt looks at; a larger one is refused (401) before it is parsed',
      }),
      leeway_seconds: Type.Integer({
        minimum: 0,
        maximum: 300,
        default: 60,
        env: 'COFFER_LOGIN_LEEWAY',
        description:
          "clock skew allowed when checking a JWT's exp, nbf and iat (seconds, at most 300)",
      }),
      jwks_refresh_seconds: Type.Integer({
        minimum: 1,
        maximum: 86_400,
        default: 300,
        env: 'COFFER_LOGIN_JWKS_REFRESH',
        description:
          "how old an issuer's key set may grow before a login fetches it again (in the background)",
      }),
      jwks_min_refresh_seconds: Type.Integer({
        minimum: 0,
        maximum: 3600,
        default: 10,
        env: 'COFFER_LOGIN_JWKS_MIN_REFRESH',
        description:
          "the least time between two fetches of one issuer's key set: a JWT with an unknown kid fetches it again at most this often",
      }),
      jwks_max_stale_seconds: Type.Integer({
        minimum: 1,
        maximum: 604_800,
        default: 86_400,
        env: 'COFFER_LOGIN_JWKS_MAX_STALE',
        description:
          'how long the last key set fetched from an issuer is used while the issuer cannot be reached; after that its logins are refused',
      }),
      fetch_timeout_ms: Type.Integer({
        minimum: 100,
        maximum: 60_000,
        default: 5000,
        env: 'COFFER_LOGIN_FETCH_TIMEOUT_MS',
        description: "how long a fetch of an issuer's keys or discovery document may take",
      }),
    }),
    console: group({
      idle_timeout_seconds: Type.Integer({
        minimum: 60,
        maximum: 86_400,
        default: 900,
        env: 'COFFER_CONSOLE_IDLE_TIMEOUT',
        description:
          'a web console session unused for this long (seconds) has ended: its cookie is refused from then on',
      }),
      max_lifetime_seconds: Type.Integer({
        minimum: 300,
        maximum: 604_800,
        default: 28_800,
        env: 'COFFER_CONSOLE_MAX_LIFETIME',
        description:
          'a web console session ends this long (seconds) after sign-in however much it is used, and never outlives the token behind it',
      }),
    }),
    metrics: group({
      port: Type.Unsafe<number | null>({
        type: ['integer', 'null'],
        minimum: 0,
        maximum: 65535,
        default: null,
        env: 'COFFER_METRICS_PORT',
        description:
          'also serve the metrics at `http://<metrics host>:<port>/metrics`, without a token, for a Prometheus on a private network (0 = any free port). Unset: only `GET /v1/sys/metrics`, with a token that may `read_metrics` ([operations](operations.md))',
      }),
      host: Type.String({
        minLength: 1,
        default: '127.0.0.1',
        env: 'COFFER_METRICS_HOST',
        description:
          'the address the metrics port listens on: anyone who reaches it reads the metrics, so keep it private',
      }),
    }),
    vault: group({
      mounts: Type.Array(
        Type.String({
          pattern:
            '^[a-z][a-z0-9_-]{0,62}(=[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)*)?(:(secret|config))?$',
        }),
        {
          maxItems: 32,
          default: ['secret'],
          env: 'COFFER_VAULT_MOUNTS',
          description:
            "the KV v2 mounts Vault's clients see under `/vault/v1` ([Vault compatibility](vault-compatibility.md)), comma-separated `name[=namespace prefix][:secret|config]`: `secret` serves `secret/data/<namespace>/<key>` from the top level, `apps=teams/apps:config` serves `apps/data/<path>` from `teams/apps/<path>` as config values",
        },
      ),
    }),
    public_url: optionalString({
      env: 'COFFER_PUBLIC_URL',
      description:
        "the address people and providers reach Coffer at, scheme and host only (`https://coffer.example.com`), when a reverse proxy stands in front: the web console builds its OpenID sign-in callback from it, and with `https` its cookies are Secure (`__Host-`) even where the proxy ends TLS. Unset: the request's Host, and Secure only under COFFER_TLS_CERT",
    }),
    trusted_proxies: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      maxItems: 1000,
      default: [],
      env: 'COFFER_TRUSTED_PROXIES',
      description:
        'comma-separated CIDRs or addresses of reverse proxies; from these peers the client address (for the limits and the audit log) is the rightmost `X-Forwarded-For` hop that is not itself a trusted proxy. From any other peer the header is ignored',
    }),
    roles: Type.Unsafe<RoleTable>({
      type: 'object',
      additionalProperties: { type: 'array', minItems: 1, items: ruleSchema },
      default: {},
      description: 'custom roles (configuration file only; "Roles and scopes" in the README)',
    }),
  },
  { additionalProperties: false },
);

/** The settings, as loaded: Coffer's own, the storage backends' and the key providers'. */
export type CofferConfig = Omit<Static<typeof CoreSettings>, 'storage' | 'key_provider'> &
  KeyProviderSettings & { storage: StorageName };

/** A leaf of the settings: its dotted path, schema and notes. */
export interface SettingLeaf {
  readonly field: string;
  readonly schema: TSchema & Partial<SettingNotes> & { default?: unknown };
}

/** The leaves of an object schema, depth first, in declaration order. */
export function leavesOf(schema: TSchema, prefix = ''): SettingLeaf[] {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties;
  if (schema.type !== 'object' || properties === undefined || 'env' in schema)
    return prefix === '' ? [] : [{ field: prefix, schema }];
  return Object.entries(properties).flatMap(([name, child]) =>
    leavesOf(child, prefix === '' ? name : `${prefix}.${name}`),
  );
}

/** The defaults an object schema declares: a leaf's `default`, or null for one that may be null. */
export function defaultsOf(schema: TSchema): unknown {
  if ('default' in schema) return structuredClone(schema.default);
  const properties = (schema as { properties?: Record<string, TSchema> }).properties;
  if (schema.type === 'object' && properties !== undefined) {
    const out: Record<string, unknown> = {};
    for (const [name, child] of Object.entries(properties)) {
      const value = defaultsOf(child);
      if (value !== undefined) out[name] = value;
    }
    return out;
  }
  if (Array.isArray(schema.type) && schema.type.includes('null')) return null;
  return undefined; // optional, with no default: absent
}
