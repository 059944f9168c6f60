/**
 * The whole configuration, made from the settings' one declaration: Coffer's own and the storage backends'
 * (config/settings.ts) and the master key providers' (keys/registry.ts). From it come the schema ajv
 * checks, the defaults, the environment variables the loader reads, and their table (docs/configuration.md
 * and `coffer help settings`). No secret has a default: the root token, a PostgreSQL URL and a PKCS#11 PIN
 * come only from the environment (or a file it names).
 */
import type { TSchema } from '@sinclair/typebox';
import { KEY_PROVIDERS, providerConfigProperties, providerEnv } from '../keys/registry.js';
import { CoreSettings, defaultsOf, leavesOf } from './settings.js';

export { type CofferConfig, LOG_LEVELS } from './settings.js';

/** The schema a configuration (defaults, file, environment, in that order) must meet. */
export const configSchema = {
  ...CoreSettings,
  required: [...(CoreSettings.required ?? []), ...KEY_PROVIDERS.flatMap((p) => p.fields)],
  properties: { ...CoreSettings.properties, ...providerConfigProperties() },
} as const;

/** An environment variable: the field it sets, how its text is read, what it means, its default. */
export interface EnvSetting {
  readonly env: string;
  /** Dotted path into the configuration (`audit.sync_ms`). */
  readonly field: string;
  readonly kind: 'string' | 'integer' | 'number' | 'boolean' | 'list';
  readonly description: string;
  /** The default as the docs show it (`(unset)` when there is none). */
  readonly shownDefault: string;
}

type Leaf = TSchema & { env?: string; description?: string; shownDefault?: string };

function kindOf(schema: Leaf): EnvSetting['kind'] {
  const types = [schema.type].flat();
  if (types.includes('array')) return 'list';
  if (types.includes('boolean')) return 'boolean';
  if (types.includes('integer')) return 'integer';
  if (types.includes('number')) return 'number';
  return 'string';
}

function shown(value: unknown): string {
  if (value === undefined || value === null) return '(unset)';
  if (Array.isArray(value)) return value.length === 0 ? 'none' : `\`${value.join(',')}\``;
  return `\`${String(value)}\``;
}

const DEFAULTS = defaultsOf(configSchema) as Record<string, unknown>;

function defaultAt(field: string): unknown {
  return field
    .split('.')
    .reduce<unknown>((at, name) => (at as Record<string, unknown> | undefined)?.[name], DEFAULTS);
}

/** Every `COFFER_*` variable a setting reads: Coffer's and the storage backends', then the providers'. */
export const ENV_SETTINGS: readonly EnvSetting[] = [
  ...leavesOf(CoreSettings)
    .filter(({ schema }) => (schema as Leaf).env !== undefined)
    .map(({ field, schema }) => {
      const leaf = schema as Leaf;
      return {
        env: leaf.env!,
        field,
        kind: kindOf(leaf),
        description: leaf.description ?? '',
        shownDefault: leaf.shownDefault ?? shown(defaultAt(field)),
      };
    }),
  ...providerEnv().map((e) => ({
    env: e.env,
    field: e.field,
    kind: e.kind,
    description: e.meaning,
    shownDefault: shown(defaultAt(e.field)),
  })),
];

/** The configuration when nothing is set: every declared default. */
export function configDefaults(): Record<string, unknown> {
  return structuredClone(DEFAULTS);
}

/** Fields that may come only from the environment, each with the sentence refusing it in a file. */
export const ENV_ONLY: ReadonlyMap<string, string> = new Map(
  Object.entries(configSchema.properties as Record<string, { envOnly?: string }>)
    .filter(([, schema]) => schema.envOnly !== undefined)
    .map(([field, schema]) => [field, schema.envOnly!]),
);
