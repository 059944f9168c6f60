import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { checkRoleRules } from '../auth/roles.js';
import { ConfigError } from '../errors.js';
import { providerEnv, providerProblem } from '../keys/registry.js';
import { addressBlocks } from '../model/address-blocks.js';
import { type CofferConfig, configSchema } from './schema.js';

type Env = Readonly<Record<string, string | undefined>>;

/** How many different characters a chosen root token needs: 32 random base64 characters have about 25. */
export const ROOT_TOKEN_MIN_DISTINCT = 16;

const DEFAULT_FILE = fileURLToPath(new URL('../../../config/default.json', import.meta.url));

/** Environment variables and the configuration field each one sets; the key providers' come from their plugins. */
const CORE_ENV = [
  { env: 'COFFER_HOST', field: 'host', kind: 'string' },
  { env: 'COFFER_PORT', field: 'port', kind: 'integer' },
  { env: 'COFFER_WORKERS', field: 'workers', kind: 'integer' },
  { env: 'COFFER_DATA_DIR', field: 'data_dir', kind: 'string' },
  { env: 'COFFER_STORAGE', field: 'storage', kind: 'string' },
  { env: 'COFFER_PG_URL', field: 'pg_url', kind: 'string' },
  { env: 'COFFER_PG_SCHEMA', field: 'postgres.schema', kind: 'string' },
  { env: 'COFFER_PG_POOL_SIZE', field: 'postgres.pool_size', kind: 'integer' },
  {
    env: 'COFFER_PG_STATEMENT_TIMEOUT_MS',
    field: 'postgres.statement_timeout_ms',
    kind: 'integer',
  },
  { env: 'COFFER_ROOT_TOKEN', field: 'root_token', kind: 'string' },
  { env: 'COFFER_KEY_PROVIDER', field: 'key_provider', kind: 'string' },
  { env: 'COFFER_KEYRING_ROTATE_AFTER', field: 'keyring.rotate_after', kind: 'string' },
  { env: 'COFFER_SNAPSHOT_DIR', field: 'snapshot.dir', kind: 'string' },
  { env: 'COFFER_SNAPSHOT_EVERY', field: 'snapshot.every', kind: 'string' },
  { env: 'COFFER_SNAPSHOT_KEEP', field: 'snapshot.keep', kind: 'integer' },
  { env: 'COFFER_AUDIT_DIR', field: 'audit.dir', kind: 'string' },
  { env: 'COFFER_AUDIT_STDOUT', field: 'audit.stdout', kind: 'boolean' },
  { env: 'COFFER_AUDIT_FAIL_OPEN', field: 'audit.fail_open', kind: 'boolean' },
  { env: 'COFFER_AUDIT_CHECKPOINT_EVERY', field: 'audit.checkpoint_every', kind: 'integer' },
  { env: 'COFFER_AUDIT_MAX_FILE_BYTES', field: 'audit.max_file_bytes', kind: 'integer' },
  { env: 'COFFER_AUDIT_MIN_FREE_BYTES', field: 'audit.min_free_bytes', kind: 'integer' },
  { env: 'COFFER_AUDIT_SYNC_MS', field: 'audit.sync_ms', kind: 'integer' },
  { env: 'COFFER_AUDIT_SYNC_EVERY_ENTRY', field: 'audit.sync_every_entry', kind: 'boolean' },
  { env: 'COFFER_DEFAULT_TTL', field: 'default_ttl', kind: 'integer' },
  { env: 'COFFER_MAX_TTL', field: 'max_ttl', kind: 'integer' },
  { env: 'COFFER_MAX_VALUE_BYTES', field: 'max_value_bytes', kind: 'integer' },
  { env: 'COFFER_TLS_CERT', field: 'tls.cert', kind: 'string' },
  { env: 'COFFER_TLS_KEY', field: 'tls.key', kind: 'string' },
  { env: 'COFFER_LOG_LEVEL', field: 'log_level', kind: 'string' },
  { env: 'COFFER_AUTH_FAILURE_BURST', field: 'auth_failures.burst', kind: 'integer' },
  { env: 'COFFER_AUTH_FAILURE_RATE', field: 'auth_failures.per_second', kind: 'number' },
  { env: 'COFFER_AUTH_FLOOD_BURST', field: 'auth_failures.flood_burst', kind: 'integer' },
  { env: 'COFFER_AUTH_FLOOD_RATE', field: 'auth_failures.flood_per_second', kind: 'number' },
  { env: 'COFFER_REQUEST_TIMEOUT', field: 'request_timeout_seconds', kind: 'integer' },
  { env: 'COFFER_TRUSTED_PROXIES', field: 'trusted_proxies', kind: 'list' },
] as const;

export const ENV_SETTINGS: readonly {
  readonly env: string;
  readonly field: string;
  readonly kind: 'string' | 'integer' | 'number' | 'boolean' | 'list';
}[] = [...CORE_ENV, ...providerEnv()];

function readJson(path: string, setting: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(
      setting,
      `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(setting, `${path} is not valid JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(setting, `${path} holds JSON but not an object ({ … })`);
  return parsed as Record<string, unknown>;
}

function setField(target: Record<string, unknown>, field: string, value: unknown): void {
  const [head, tail] = field.split('.') as [string, string | undefined];
  if (tail === undefined) target[head] = value;
  else target[head] = { ...(target[head] as Record<string, unknown>), [tail]: value };
}

function parseInteger(env: string, text: string): number {
  if (/^-[0-9]+$/.test(text)) throw new ConfigError(env, `must be 0 or more, got ${text}`);
  if (!/^[0-9]{1,15}$/.test(text))
    throw new ConfigError(env, `must be a whole number, got "${text}"`);
  return Number(text);
}

function parseBoolean(env: string, text: string): boolean {
  if (text !== 'true' && text !== 'false')
    throw new ConfigError(env, `must be true or false, got "${text}"`);
  return text === 'true';
}

function parseNumber(env: string, text: string): number {
  if (/^-[0-9.]+$/.test(text)) throw new ConfigError(env, `must be more than 0, got ${text}`);
  if (!/^[0-9]{1,15}(\.[0-9]{1,6})?$/.test(text))
    throw new ConfigError(env, `must be a number, got "${text}"`);
  return Number(text);
}

/**
 * Builds the configuration from the default file, an optional COFFER_CONFIG file and the environment.
 * Relative paths are resolved against `cwd`. Throws ConfigError naming the first bad setting.
 */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): CofferConfig {
  const merged: Record<string, unknown> = readJson(DEFAULT_FILE, 'config/default.json');
  if (env.COFFER_CONFIG) {
    const overlay = readJson(resolve(cwd, env.COFFER_CONFIG), 'COFFER_CONFIG');
    if ('root_token' in overlay)
      throw new ConfigError('COFFER_CONFIG', 'root_token may only come from COFFER_ROOT_TOKEN');
    if ('pg_url' in overlay)
      throw new ConfigError(
        'COFFER_CONFIG',
        'the PostgreSQL URL (it may hold a password) may only come from COFFER_PG_URL, or the PG* variables and a .pgpass file',
      );
    if ('pkcs11_pin' in overlay)
      throw new ConfigError(
        'COFFER_CONFIG',
        'the PKCS#11 PIN may only come from COFFER_PKCS11_PIN or pkcs11.pin_file',
      );
    Object.assign(merged, overlay);
  }
  const fromEnv = new Map<string, string>();
  for (const { env: name, field, kind } of ENV_SETTINGS) {
    const text = env[name];
    if (text === undefined || (text === '' && name !== 'COFFER_ROOT_TOKEN')) continue;
    if (name === 'COFFER_ROOT_TOKEN' && text === '')
      throw new ConfigError(name, 'must not be empty when set');
    const value =
      kind === 'integer'
        ? parseInteger(name, text)
        : kind === 'number'
          ? parseNumber(name, text)
          : kind === 'boolean'
            ? parseBoolean(name, text)
            : kind === 'list'
              ? text
                  .split(',')
                  .map((item) => item.trim())
                  .filter(Boolean)
              : text;
    setField(merged, field, value);
    fromEnv.set(field, name);
  }

  const ajv = new Ajv({ allErrors: false });
  if (!ajv.validate(configSchema, merged)) {
    const error = ajv.errors![0]!;
    const field =
      error.instancePath.slice(1).replaceAll('/', '.') ||
      String((error.params as { additionalProperty?: string }).additionalProperty ?? 'config');
    const setting = fromEnv.get(field) ?? field;
    const allowed =
      error.keyword === 'enum'
        ? `must be one of: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`
        : (error.message ?? 'invalid');
    const value = ['root_token', 'pkcs11_pin', 'pg_url'].includes(field) ? '' : ` (${allowed})`;
    throw new ConfigError(
      setting,
      error.keyword === 'additionalProperties' ? 'unknown setting' : `invalid value${value}`,
    );
  }
  const config = merged as unknown as CofferConfig;
  checkConsistency(config, fromEnv);
  return {
    ...config,
    data_dir: resolve(cwd, config.data_dir),
    master_key_file: resolve(cwd, config.master_key_file),
    master_passphrase_file:
      config.master_passphrase_file === null ? null : resolve(cwd, config.master_passphrase_file),
    audit: {
      ...config.audit,
      dir: resolve(cwd, config.audit.dir ?? join(config.data_dir, 'audit')),
    },
    snapshot: {
      ...config.snapshot,
      dir: config.snapshot.dir === null ? null : resolve(cwd, config.snapshot.dir),
    },
    pkcs11: {
      ...config.pkcs11,
      pin_file: config.pkcs11.pin_file === null ? null : resolve(cwd, config.pkcs11.pin_file),
    },
    tls: {
      cert: config.tls.cert === null ? null : resolve(cwd, config.tls.cert),
      key: config.tls.key === null ? null : resolve(cwd, config.tls.key),
    },
  };
}

function checkConsistency(config: CofferConfig, fromEnv: Map<string, string>): void {
  const name = (field: string): string => fromEnv.get(field) ?? field;
  if (config.default_ttl > config.max_ttl) {
    throw new ConfigError(
      name('default_ttl'),
      `must not exceed the maximum TTL (${config.max_ttl})`,
    );
  }
  const problem = providerProblem(config);
  if (problem) {
    const env = ENV_SETTINGS.find((e) => e.field === problem.field)?.env;
    throw new ConfigError(env ?? problem.field, problem.message);
  }
  if ((config.tls.cert === null) !== (config.tls.key === null)) {
    throw new ConfigError(
      config.tls.cert === null ? 'COFFER_TLS_CERT' : 'COFFER_TLS_KEY',
      'TLS needs both a certificate and a key',
    );
  }
  if (config.root_token !== undefined && !/^[\x21-\x7e]{1,1024}$/.test(config.root_token)) {
    throw new ConfigError(
      'COFFER_ROOT_TOKEN',
      'must be 1 to 1024 printable ASCII characters without spaces',
    );
  }
  if (config.root_token !== undefined && config.root_token.length < 32) {
    throw new ConfigError(
      'COFFER_ROOT_TOKEN',
      `is ${config.root_token.length} characters; a root token must be at least 32 (make one with: openssl rand -base64 32), or leave it unset and Coffer generates one on first start`,
    );
  }
  // A root token of 32 × 'a' passes the length: too little variety says it was not made at random.
  if (
    config.root_token !== undefined &&
    new Set(config.root_token).size < ROOT_TOKEN_MIN_DISTINCT
  ) {
    throw new ConfigError(
      'COFFER_ROOT_TOKEN',
      `has only ${new Set(config.root_token).size} distinct characters; a root token must have at least ${ROOT_TOKEN_MIN_DISTINCT} (make a random one with: openssl rand -base64 32), or leave it unset and Coffer generates one on first start`,
    );
  }
  if ((config.snapshot.dir === null) !== (config.snapshot.every === null)) {
    throw new ConfigError(
      name(config.snapshot.dir === null ? 'snapshot.dir' : 'snapshot.every'),
      config.snapshot.dir === null
        ? 'scheduled snapshots need a directory too (COFFER_SNAPSHOT_DIR)'
        : 'scheduled snapshots need an interval too (COFFER_SNAPSHOT_EVERY, e.g. 6h)',
    );
  }
  try {
    addressBlocks(config.trusted_proxies);
  } catch (err) {
    throw new ConfigError(name('trusted_proxies'), (err as Error).message);
  }
  for (const [role, rules] of Object.entries(config.roles)) {
    const problems = checkRoleRules(role, rules);
    if (problems.length > 0) throw new ConfigError('roles', problems[0]!);
  }
}
