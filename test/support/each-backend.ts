/** Runs the same tests on a server on LMDB and on one on PostgreSQL (pending with the reason when it is missing). */
import { startTestCoffer, type TestCoffer } from './harness.js';
import { dropTestSchemas, requirePostgres, testSchema } from './postgres.js';
import { pgEnv } from './shared-servers.js';

export function onEachBackend(tests: (start: () => Promise<TestCoffer>) => void): void {
  describe('on LMDB', () => {
    tests(() => startTestCoffer());
  });

  describe('on PostgreSQL', function () {
    this.timeout(60_000);
    before(async function () {
      await requirePostgres(this);
    });
    tests(() => startTestCoffer({ env: pgEnv(testSchema()) }));
    // After the tests' own after hooks (hooks run in the order they are declared).
    after(async () => {
      await dropTestSchemas();
    });
  });
}
