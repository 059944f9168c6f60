/** Coffer servers sharing one PostgreSQL store, as several hosts behind a load balancer would. */
import { startTestCoffer, type TestCoffer } from './harness.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from './postgres.js';

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

/**
 * Two servers on one new PostgreSQL schema, for the `describe` that calls this: started in its `before`
 * (pending, with the reason, where PostgreSQL cannot be had) and closed in its `after`.
 */
export function twoServersOnPostgres(): {
  readonly a: () => TestCoffer;
  readonly b: () => TestCoffer;
} {
  let a: TestCoffer | undefined;
  let b: TestCoffer | undefined;
  before(async function () {
    await requirePostgres(this);
    const schema = testSchema();
    a = await startTestCoffer({ env: pgEnv(schema) });
    b = await secondServer(a, schema);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await dropTestSchemas();
  });
  return { a: () => a!, b: () => b! };
}
