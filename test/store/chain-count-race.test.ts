import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { expect } from 'chai';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { AuditRecords, AuditRollbackError } from '../../src/store/audit-records.js';
import { HighWater } from '../../src/store/high-water.js';
import { RecordSeal } from '../../src/store/record-seal.js';
import { tempDir } from '../support/harness.js';

const RECORD_KEYS = { seal: randomBytes(32), mac: randomBytes(32) };
const WRITER = { host: 'test', pid: 1, checkpoint_ms: 60_000 };

/** Two processes of one host on one store: each with its own records and its own view of the marks. */
function host(dir: string) {
  const storage = new LmdbBackend({ path: join(dir, 'lmdb') });
  const seal = new RecordSeal(() => RECORD_KEYS);
  const mark = () => new HighWater(dir, 'instance', 'a', () => RECORD_KEYS.mac);
  return {
    storage,
    first: new AuditRecords(storage, seal, mark()),
    second: new AuditRecords(storage, seal, mark()),
    /** The sibling's own commit: it records its mark only after it, so it never reads it first. */
    sibling: new AuditRecords(storage, seal),
    mark: mark(),
  };
}

describe("a start's chain count against the host's mark", () => {
  it('takes a sibling whose mark is seen before its commit is (two workers starting at once) as a sibling, not a rollback', async () => {
    const { storage, first, second, sibling, mark } = host(tempDir());
    try {
      expect((await first.started('a', Date.now(), WRITER)).count).to.equal(1);
      // The sibling's mark of chain 2 is on disk; its commit lands 100 ms later.
      mark.record([2]);
      const landing = new Promise<void>((resolve) =>
        setTimeout(() => {
          sibling.started('b', Date.now(), WRITER).then(() => resolve());
        }, 100),
      );
      const started = await second.started('c', Date.now(), WRITER);
      await landing;
      expect(started).to.deep.equal({ count: 3 });
      expect(await second.chainCount()).to.equal(3);
    } finally {
      await storage.close();
    }
  });

  it('still refuses a store whose count stays below the mark (put back from an older copy)', async () => {
    const { storage, first, mark } = host(tempDir());
    try {
      await first.started('a', Date.now(), WRITER);
      mark.record([5]);
      const started = Date.now();
      const refused = await first.started('b', Date.now(), WRITER).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refused).to.be.instanceOf(AuditRollbackError);
      expect((refused as AuditRollbackError).stored).to.equal(1);
      expect((refused as AuditRollbackError).seen).to.equal(5);
      // It looked again before refusing.
      expect(Date.now() - started).to.be.at.least(300);
      expect(await first.chainCount()).to.equal(1);
    } finally {
      await storage.close();
    }
  });
});
