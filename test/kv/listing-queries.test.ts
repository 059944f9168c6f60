import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { ROOT_PRINCIPAL } from '../../src/auth/principal.js';
import { sodiumReady } from '../../src/crypto/aead.js';
import { LocalKeyProvider } from '../../src/keys/local-provider.js';
import { listNamespace } from '../../src/kv/listing.js';
import type { StorageBackend } from '../../src/storage/backend.js';
import { PostgresBackend } from '../../src/storage/postgres-backend.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { packMeta } from '../../src/store/kv-format.js';
import { KvRecords } from '../../src/store/kv-records.js';
import { metaKey } from '../../src/store/layout.js';
import type { RecordSeal } from '../../src/store/record-seal.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';

/** The real backend, with every call counted (each is one query here: no scan reaches 500 rows). */
function counted(storage: StorageBackend): { storage: StorageBackend; calls: () => number } {
  let calls = 0;
  const proxy = new Proxy(storage, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls++;
        return value.apply(target, args);
      };
    },
  });
  return { storage: proxy, calls: () => calls };
}

describe('a listing page on PostgreSQL costs one query, not one per child namespace', function () {
  this.timeout(60_000);
  let backend: PostgresBackend;
  let seal: RecordSeal;
  before(async function () {
    await requirePostgres(this);
    await sodiumReady();
    backend = await PostgresBackend.open({
      connectionString: PG_TEST_URL,
      schema: testSchema(),
      poolSize: 4,
      statementTimeoutMs: 10_000,
    });
    const { holder } = await KeyringHolder.open(
      backend,
      new LocalKeyProvider(randomBytes(32)),
      Date.now(),
    );
    seal = holder.recordSeal;
    // Three keys in `app`, and 250 child namespaces, each with a key and a deeper namespace.
    const metas = [
      ...['k1', 'k2', 'k3'].map((key) => metaKey('app', key)),
      ...Array.from({ length: 250 }, (_, i) => [
        metaKey(`app/c${String(i).padStart(3, '0')}`, 'k'),
        metaKey(`app/c${String(i).padStart(3, '0')}/deep`, 'k'),
      ]).flat(),
    ];
    await backend.atomic([], () => ({
      writes: metas.map((key) => ({
        op: 'put' as const,
        key,
        value: packMeta(seal, key, { latest: 1, type: 'config', first: 1 }),
      })),
      result: undefined,
    }));
  });
  after(async () => {
    await backend?.close();
    await dropTestSchemas();
  });

  it('lists every child once, in order, over pages of 100: two calls for the page with keys, one for each other', async () => {
    const names: string[] = [];
    const costs: number[] = [];
    let cursor: string | undefined;
    do {
      const { storage, calls } = counted(backend);
      const records = new KvRecords(storage, seal, {
        checkCurrent: () => undefined,
        guard: () => undefined,
      });
      const page = await listNamespace(
        records,
        ROOT_PRINCIPAL,
        'app',
        {
          limit: 100,
          ...(cursor === undefined ? {} : { cursor }),
        },
        Date.now(),
      );
      costs.push(calls());
      names.push(...page.keys, ...page.namespaces);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    expect(names).to.deep.equal([
      'k1',
      'k2',
      'k3',
      ...Array.from({ length: 250 }, (_, i) => `c${String(i).padStart(3, '0')}`),
    ]);
    expect(costs).to.deep.equal([2, 1, 1]);
  });
});
