import { expect } from 'chai';
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

  describe('announcing writes of chosen keys to every handle (LISTEN/NOTIFY)', () => {
    const watched = Buffer.from('Swatched');
    const openAnnouncing = (schema: string) =>
      PostgresBackend.open({
        connectionString: PG_TEST_URL,
        schema,
        poolSize: 4,
        statementTimeoutMs: 10_000,
        announce: [watched],
      });

    it('tells every handle of a committed write of an announced key, and of nothing else', async () => {
      const schema = testSchema();
      const [writer, reader] = [await openAnnouncing(schema), await openAnnouncing(schema)];
      try {
        const heard: (string | undefined)[] = [];
        const stop = reader.onChange((key) => heard.push(key && Buffer.from(key).toString()));
        // Listening starts with a gap (anything announced before it was not heard).
        for (let i = 0; i < 50 && heard.length === 0; i++)
          await new Promise((r) => setTimeout(r, 20));
        expect(heard).to.deep.equal([undefined]);
        const put = (key: Buffer) =>
          writer.atomic([], () => ({
            writes: [{ op: 'put' as const, key, value: Buffer.from('1') }],
            result: undefined,
          }));
        await put(Buffer.from('Sother'));
        await writer
          .atomic([watched], () => {
            throw new Error('refused plan');
          })
          .catch(() => undefined);
        await put(watched);
        for (let i = 0; i < 50 && heard.length < 2; i++)
          await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 100));
        expect(heard).to.deep.equal([undefined, 'Swatched']);
        stop();
        await put(watched);
        await new Promise((r) => setTimeout(r, 200));
        expect(heard).to.have.length(2);
      } finally {
        await writer.close();
        await reader.close();
      }
    });
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
