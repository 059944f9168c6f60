/**
 * Loads the configuration: the declared defaults (config/settings.ts), an optional JSON file named by
 * COFFER_CONFIG laid over them, then the `COFFER_*` variables; checked against the schema and the rules
 * a schema cannot say.
 */

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { checkRoleRules } from '../auth/roles.js';
import { ConfigError } from '../errors.js';
import { KEY_PROVIDERS, providerProblem } from '../keys/registry.js';
import { addressBlocks } from '../model/address-blocks.js';
import { VaultMountError, vaultMounts } from '../model/vault-mounts.js';
import {
  type CofferConfig,
  configDefaults,
  configSchema,
  ENV_ONLY,
  ENV_SETTINGS,
} from './schema.js';
import { leavesOf } from './settings.js';

export { ENV_SETTINGS } from './schema.js';

type Env = Readonly<Record<string, string | undefined>>;

/** How many different characters a chosen root token needs: 32 random base64 characters have about 25. */
export const ROOT_TOKEN_MIN_DISTINCT = 16;

/** COFFER_PUBLIC_URL: a scheme and a host (a name, or an address; IPv6 in brackets), a port, no path. */
const PUBLIC_URL = /^https?:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?\/?$/;

function isPublicUrl(text: string): boolean {
  const match = PUBLIC_URL.exec(text);
  const port = match?.[2] === undefined ? undefined : Number(match[2]);
  return match !== null && (port === undefined || (port >= 1 && port <= 65_535));
}

const validate = new Ajv({
  allErrors: false,
  keywords: ['env', 'envOnly', 'shownDefault', 'path'],
}).compile(configSchema);

/** Where `position` is in `text`, as an editor shows it. */
function lineAndColumn(text: string, position: number): string {
  const before = text.slice(0, position).split('\n');
  return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

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
    // Only where: V8's message quotes the text around the fault, and a configuration file holds secrets
    // (a database password, a root token).
    const message = (err as Error).message;
    const at = /at position (\d+)/.exec(message)?.[1];
    const where =
      (at !== undefined && Number(at) >= text.length) || /end of JSON input/.test(message)
        ? ' (it ends before its JSON does)'
        : at !== undefined
          ? ` (${lineAndColumn(text, Number(at))})`
          : '';
    throw new ConfigError(setting, `${path} is not valid JSON${where}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(setting, `${path} holds JSON but not an object ({ … })`);
  return parsed as Record<string, unknown>;
}

const isGroup = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Lays a configuration file over `base`: a group given in part (`{"audit": {"stdout": true}}`) keeps the
 * rest of its defaults; any other value (a list included) replaces the default.
 */
function layOver(base: Record<string, unknown>, overlay: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(overlay)) {
    const under = base[name];
    if (isGroup(under) && isGroup(value)) {
      const group = { ...under };
      layOver(group, value);
      base[name] = group;
    } else base[name] = value;
  }
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
  const merged = configDefaults();
  if (env.COFFER_CONFIG) {
    const overlay = readJson(resolve(cwd, env.COFFER_CONFIG), 'COFFER_CONFIG');
    for (const [field, refusal] of ENV_ONLY)
      if (field in overlay) throw new ConfigError('COFFER_CONFIG', refusal);
    layOver(merged, overlay);
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

  if (!validate(merged)) {
    const error = validate.errors![0]!;
    const field =
      error.instancePath.slice(1).replaceAll('/', '.') ||
      String((error.params as { additionalProperty?: string }).additionalProperty ?? 'config');
    // An item of a list from a variable (vault.mounts.0) is named by the variable and its place in it.
    const item = /^(.+)\.([0-9]+)$/.exec(field);
    const setting =
      fromEnv.get(field) ??
      (item && fromEnv.has(item[1]!)
        ? `${fromEnv.get(item[1]!)} (item ${Number(item[2]) + 1})`
        : field);
    const allowed =
      error.keyword === 'enum'
        ? `must be one of: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`
        : (error.message ?? 'invalid');
    // What may come only from the environment is a secret: its refusal says nothing of the value.
    const value = ENV_ONLY.has(field) ? '' : ` (${allowed})`;
    throw new ConfigError(
      setting,
      error.keyword === 'additionalProperties' ? 'unknown setting' : `invalid value${value}`,
    );
  }
  const config = merged as unknown as CofferConfig;
  checkConsistency(config, fromEnv);
  // The audit log's default place is in the data directory.
  setField(merged, 'audit.dir', config.audit.dir ?? join(config.data_dir, 'audit'));
  makeAbsolute(merged, SERVER_PATHS, cwd);
  return config;
}

/**
 * Makes each of `fields` (dotted) that holds a relative path in `target` absolute from `cwd`: every setting
 * declared as a path, Coffer's own or a key provider's (KeyProviderPlugin.paths), as the server loads it
 * and as `coffer operator migrate-key --to FILE` sends it.
 */
export function makeAbsolute(
  target: Record<string, unknown>,
  fields: readonly string[],
  cwd: string,
): void {
  for (const field of fields) {
    const value = getField(target, field);
    if (typeof value === 'string') setField(target, field, resolve(cwd, value));
  }
}

/** The settings that hold paths on the server (dotted fields): declared `path`, or in a provider's `paths`. */
const SERVER_PATHS: readonly string[] = [
  ...leavesOf(configSchema as TSchema)
    .filter((leaf) => leaf.schema.path === true)
    .map((leaf) => leaf.field),
  ...KEY_PROVIDERS.flatMap((provider) => provider.paths),
];

function getField(target: Record<string, unknown>, field: string): unknown {
  const [head, tail] = field.split('.') as [string, string | undefined];
  const value = target[head];
  if (tail === undefined) return value;
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[tail]
    : undefined;
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
  try {
    vaultMounts(config.vault.mounts);
  } catch (err) {
    if (!(err instanceof VaultMountError)) throw err;
    throw new ConfigError(name('vault.mounts'), err.message);
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
  if (config.public_url !== null && !isPublicUrl(config.public_url))
    throw new ConfigError(
      name('public_url'),
      // Not repeated back: a URL may carry user:password@, which a start-up error would print.
      'must be a scheme and a host, and a port (1 to 65535) if any, such as https://coffer.example.com or http://10.0.0.5:8750 (no path, no user or password)',
    );
  if (
    config.metrics.port !== null &&
    config.metrics.port !== 0 &&
    config.metrics.port === config.port
  )
    throw new ConfigError(
      name('metrics.port'),
      `must differ from the API's port (${config.port}): the metrics get an address of their own`,
    );
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
