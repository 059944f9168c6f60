/** Coffer servers sharing one PostgreSQL store, as several hosts behind a load balancer would. */
import { startTestCoffer, type TestCoffer } from './harness.js';
import { PG_TEST_URL } from './postgres.js';

/** The settings of a server on the PostgreSQL store `schema` (a short statement timeout, for outage tests). */
export const pgEnv = (schema: string, url = PG_TEST_URL): Record<string, string> => ({
  COFFER_STORAGE: 'postgres',
  COFFER_PG_URL: url,
  COFFER_PG_SCHEMA: schema,
  COFFER_PG_STATEMENT_TIMEOUT_MS: '2000',
});

/**
 * Another server on `a`'s database: its own directory (audit files) and the store's master key, as another
 * host would have; `env` adds settings of its own.
 */
export const secondServer = (
  a: TestCoffer,
  schema: string,
  url = PG_TEST_URL,
  env: Record<string, string> = {},
): Promise<TestCoffer> =>
  startTestCoffer({
    rootToken: a.rootToken,
    env: { ...pgEnv(schema, url), COFFER_MASTER_KEY_FILE: a.config.master_key_file, ...env },
  });
