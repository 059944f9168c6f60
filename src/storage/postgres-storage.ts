/**
 * The PostgreSQL backend as the registry knows it (storage/plugin.ts): its settings, with their
 * `COFFER_PG_*` variables, and how it opens (postgres-backend.ts).
 */
import { Type } from '@sinclair/typebox';
import {
  type StoragePlugin,
  StorageSettingError,
  type StorageSettings,
  StorageTargetError,
} from './plugin.js';
import { PostgresBackend } from './postgres-backend.js';

/** The settings a PostgreSQL store is opened with (storage/plugin.ts). */
interface PostgresSettings {
  readonly postgres: {
    readonly schema: string;
    readonly pool_size: number;
    readonly statement_timeout_ms: number;
  };
  readonly pg_url?: string;
}

/** One database shared by several servers (docs/deployment.md). */
export const postgresStorage = {
  name: 'postgres',
  settings: {
    postgres: Type.Object(
      {
        schema: Type.String({
          pattern: '^[a-z_][a-z0-9_]{0,62}$',
          default: 'coffer',
          env: 'COFFER_PG_SCHEMA',
          description:
            "for `postgres`: the schema holding Coffer's tables (created and upgraded at start-up)",
        }),
        pool_size: Type.Integer({
          minimum: 1,
          maximum: 1000,
          default: 10,
          env: 'COFFER_PG_POOL_SIZE',
          description: 'for `postgres`: connections per server process',
        }),
        statement_timeout_ms: Type.Integer({
          minimum: 100,
          maximum: 600_000,
          default: 5000,
          env: 'COFFER_PG_STATEMENT_TIMEOUT_MS',
          description:
            'for `postgres`: how long a statement may run before the request answers 503 `storage_unavailable`',
        }),
      },
      { additionalProperties: false },
    ),
    pg_url: Type.Optional(
      Type.String({
        minLength: 1,
        env: 'COFFER_PG_URL',
        envOnly:
          'the PostgreSQL URL (it may hold a password) may only come from COFFER_PG_URL, or the PG* variables and a .pgpass file',
        description:
          'for `postgres`: `postgres://user@host:5432/db`; only from the environment (it may hold a password). Unset: the standard `PG*` variables and `~/.pgpass` (owner-only) apply',
      }),
    ),
  },
  open: (given, announced) => {
    const settings = given as unknown as PostgresSettings;
    if (settings.pg_url !== undefined && !URL.canParse(settings.pg_url))
      // Named, never shown: it may hold a password.
      throw new StorageSettingError(
        'COFFER_PG_URL',
        'is not a URL (postgres://user@host:5432/db; the value is not shown, as it may hold a password)',
      );
    return PostgresBackend.open({
      ...(settings.pg_url === undefined ? {} : { connectionString: settings.pg_url }),
      schema: settings.postgres.schema,
      poolSize: settings.postgres.pool_size,
      statementTimeoutMs: settings.postgres.statement_timeout_ms,
      announce: announced.keys,
      announcePrefixes: announced.prefixes,
      announcePrefixesOnce: announced.prefixesOnce ?? [],
    });
  },
  mayExist: () => true,
  targetForm: 'postgres[:URL]',
  // `postgres`: the database the settings name (COFFER_PG_URL, or the PG* variables); `postgres:URL`
  // another, whose password comes from PGPASSWORD or ~/.pgpass.
  target: (where, config) => {
    const url = where ?? (config as unknown as PostgresSettings).pg_url;
    if (where !== undefined && (where === '' || passwordIn(where)))
      throw new StorageTargetError(
        where === ''
          ? '--to postgres:URL names the database to copy into (or --to postgres: the one COFFER_PG_URL names)'
          : '--to postgres:URL must not hold a password (it would show in ps and the shell history): give it in PGPASSWORD or ~/.pgpass, or use --to postgres with COFFER_PG_URL',
      );
    const { pg_url: _given, ...rest } = config as unknown as PostgresSettings & StorageSettings;
    return { ...rest, storage: 'postgres', ...(url === undefined ? {} : { pg_url: url }) };
  },
  sameStore: (a, b) => {
    const [x, y] = [a, b] as unknown as PostgresSettings[];
    return x!.pg_url === y!.pg_url && x!.postgres.schema === y!.postgres.schema;
  },
  describe: () => 'PostgreSQL',
} satisfies StoragePlugin<'postgres'>;

/** Whether a postgres:// URL holds a password (user:password@…). */
function passwordIn(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return /:[^/@]*@/.test(url);
  }
}
