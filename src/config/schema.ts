/**
 * The configuration schema. `config/default.json` holds every default; an optional file named by
 * COFFER_CONFIG is laid over it; environment variables override both (config/env.ts). No secret has a
 * default here: the root token comes only from the environment.
 */
import { ACTIONS, type RoleTable } from '../auth/roles.js';
import {
  KEY_PROVIDERS,
  type KeyProviderSettings,
  PROVIDER_NAMES,
  providerConfigProperties,
} from '../keys/registry.js';
import { VALUE_TYPES } from '../model/value-types.js';
import { STORAGE_NAMES, type StorageName } from '../store/store.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const;

/** The settings; the master key provider's come from its plugin (keys/registry.ts). */
export interface CofferConfig extends KeyProviderSettings {
  host: string;
  port: number;
  /** Server processes; 0 means one per CPU. */
  workers: number;
  data_dir: string;
  default_ttl: number;
  max_ttl: number;
  max_value_bytes: number;
  tls: { cert: string | null; key: string | null };
  log_level: (typeof LOG_LEVELS)[number];
  /** Where records are stored: the embedded LMDB in data_dir, or a PostgreSQL database (docs/deployment.md). */
  storage: StorageName;
  /** The PostgreSQL storage: its schema, connection pool size and statement timeout. */
  postgres: { schema: string; pool_size: number; statement_timeout_ms: number };
  /** Automatic rotation: rotate when the active keyring version is this old (`90d`, `12h`, …); null: never. */
  keyring: { rotate_after: string | null };
  /**
   * Scheduled snapshots of the store (operator/scheduled-snapshots.ts): into `dir` every `every` (`6h`, …),
   * keeping the newest `keep`; off while `dir` or `every` is null.
   */
  snapshot: { dir: string | null; every: string | null; keep: number };
  /** The audit log (docs/audit.md): its directory (null: <data_dir>/audit), stdout copy, failure policy, checkpoints, file size. */
  audit: {
    dir: string | null;
    stdout: boolean;
    fail_open: boolean;
    checkpoint_every: number;
    checkpoint_seconds: number;
    max_file_bytes: number;
    min_free_bytes: number;
    /** Request entries reach the disk at most this many ms after their response; sync_every_entry: before it. */
    sync_ms: number;
    sync_every_entry: boolean;
  };
  roles: RoleTable;
  /**
   * Wrong secrets of a known token allowed per client address and token: `burst` at once, then `per_second`.
   * Failed authentications per client address past `flood_burst`, then `flood_per_second` (ten times that
   * over all addresses) are a flood: summarized in the audit log and answered a second late.
   */
  auth_failures: {
    burst: number;
    per_second: number;
    flood_burst: number;
    flood_per_second: number;
  };
  /** Reverse proxies (CIDRs or addresses) whose X-Forwarded-For names the client. */
  trusted_proxies: string[];
  /** How long a client may take to send a whole request (headers: at most 10 s of it); then 408. */
  request_timeout_seconds: number;
  /** From COFFER_ROOT_TOKEN only; never read from a file. */
  root_token?: string;
  /** From COFFER_PG_URL only (it may hold a password); never read from a file. */
  pg_url?: string;
}

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

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'host',
    'port',
    'workers',
    'data_dir',
    'default_ttl',
    'max_ttl',
    'max_value_bytes',
    'tls',
    'log_level',
    'storage',
    'postgres',
    'key_provider',
    ...KEY_PROVIDERS.flatMap((p) => p.fields),
    'keyring',
    'snapshot',
    'audit',
    'roles',
    'auth_failures',
    'trusted_proxies',
    'request_timeout_seconds',
  ],
  properties: {
    host: { type: 'string', minLength: 1 },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
    workers: { type: 'integer', minimum: 0, maximum: 256 },
    data_dir: { type: 'string', minLength: 1 },
    default_ttl: { type: 'integer', minimum: 1 },
    max_ttl: { type: 'integer', minimum: 1 },
    max_value_bytes: { type: 'integer', minimum: 1, maximum: 64 * 1024 * 1024 },
    tls: {
      type: 'object',
      additionalProperties: false,
      required: ['cert', 'key'],
      properties: { cert: { type: ['string', 'null'] }, key: { type: ['string', 'null'] } },
    },
    log_level: { enum: [...LOG_LEVELS] },
    storage: { enum: [...STORAGE_NAMES] },
    postgres: {
      type: 'object',
      additionalProperties: false,
      required: ['schema', 'pool_size', 'statement_timeout_ms'],
      properties: {
        schema: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
        pool_size: { type: 'integer', minimum: 1, maximum: 1000 },
        statement_timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000 },
      },
    },
    key_provider: { enum: PROVIDER_NAMES },
    ...providerConfigProperties(),
    pkcs11_pin: { type: 'string', minLength: 1 },
    audit: {
      type: 'object',
      additionalProperties: false,
      required: [
        'dir',
        'stdout',
        'fail_open',
        'checkpoint_every',
        'checkpoint_seconds',
        'max_file_bytes',
        'min_free_bytes',
        'sync_ms',
        'sync_every_entry',
      ],
      properties: {
        dir: { type: ['string', 'null'], minLength: 1 },
        stdout: { type: 'boolean' },
        fail_open: { type: 'boolean' },
        checkpoint_every: { type: 'integer', minimum: 1, maximum: 1_000_000 },
        checkpoint_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 86_400 },
        max_file_bytes: { type: 'integer', minimum: 4096 },
        min_free_bytes: { type: 'integer', minimum: 0 },
        sync_ms: { type: 'integer', minimum: 1, maximum: 1000 },
        sync_every_entry: { type: 'boolean' },
      },
    },
    keyring: {
      type: 'object',
      additionalProperties: false,
      required: ['rotate_after'],
      properties: {
        rotate_after: { type: ['string', 'null'], pattern: '^[1-9][0-9]{0,5}[smhd]$' },
      },
    },
    snapshot: {
      type: 'object',
      additionalProperties: false,
      required: ['dir', 'every', 'keep'],
      properties: {
        dir: { type: ['string', 'null'], minLength: 1 },
        every: { type: ['string', 'null'], pattern: '^[1-9][0-9]{0,5}[smhd]$' },
        keep: { type: 'integer', minimum: 1, maximum: 10_000 },
      },
    },
    roles: {
      type: 'object',
      additionalProperties: { type: 'array', minItems: 1, items: ruleSchema },
    },
    auth_failures: {
      type: 'object',
      additionalProperties: false,
      required: ['burst', 'per_second', 'flood_burst', 'flood_per_second'],
      properties: {
        burst: { type: 'integer', minimum: 1, maximum: 1_000_000 },
        per_second: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
        flood_burst: { type: 'integer', minimum: 1, maximum: 1_000_000 },
        flood_per_second: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
      },
    },
    request_timeout_seconds: { type: 'integer', minimum: 1, maximum: 3600 },
    trusted_proxies: {
      type: 'array',
      maxItems: 1000,
      items: { type: 'string', minLength: 1, maxLength: 64 },
    },
    root_token: { type: 'string', minLength: 1 },
    pg_url: { type: 'string', minLength: 1 },
  },
} as const;
