import type { StorageBackend } from '../../src/storage/backend.js';
import { PostgresBackend } from '../../src/storage/postgres-backend.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { storageConformance } from './conformance.js';

const schemas = new Map<StorageBackend, string>();

const open = async (schema: string): Promise<StorageBackend> => {
  const backend = await PostgresBackend.open({
    connectionString: PG_TEST_URL,
    schema,
    poolSize: 8,
    statementTimeoutMs: 10_000,
  });
  schemas.set(backend, schema);
  return backend;
};

describe('PostgreSQL backend', function () {
  this.timeout(60_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  storageConformance('postgres', {
    create: () => open(testSchema()),
    async reopen(backend) {
      const schema = schemas.get(backend)!;
      await backend.close();
      return open(schema);
    },
    another: (backend) => open(schemas.get(backend)!),
  });
});
