import { expect } from 'chai';
import pg from 'pg';
import { auditChainKey, auditLinesKey, auditLinesRange } from '../../src/store/layout.js';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { runCoffer } from '../support/process.js';
import { pgEnv } from '../support/shared-servers.js';

/**
 * No stream: a database administrator puts back server B's chain record and deletes the store's copy of
 * B's later lines, so that every other host verifies a shorter chain of B. Verify on B's own host, whose
 * files still hold those lines, says so.
 */
describe("on PostgreSQL, B's chain record put back and its copy cut by a database administrator", function () {
  this.timeout(120_000);
  let a: TestCoffer | undefined;
  let b: TestCoffer | undefined;
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await b?.close().catch(() => undefined);
    await a?.close();
    await dropTestSchemas();
  });

  it("is reported by verify on B's host, where B's files are", async () => {
    const schema = testSchema();
    a = await startTestCoffer({ env: pgEnv(schema) });
    // B keeps its data directory after it stops (its files are what verify on its host reads).
    b = await startTestCoffer({
      dataDir: tempDir(),
      rootToken: a.rootToken,
      env: {
        ...pgEnv(schema),
        COFFER_MASTER_KEY_FILE: a.config.master_key_file,
        COFFER_AUDIT_CHECKPOINT_EVERY: '5',
      },
    });
    const db = new pg.Client({ connectionString: PG_TEST_URL });
    await db.connect();
    try {
      await b.put('dba/k', 'v1');
      const auditDir = b.config.audit.dir!;
      const chainB = auditLines(auditDir).find((l) => l.action === 'write')!.chain as string;
      const recordKey = auditChainKey(chainB);
      const older = (
        await db.query<{ v: Buffer }>(`SELECT v FROM "${schema}".records WHERE k = $1`, [recordKey])
      ).rows[0]!.v;
      const seqThen = Math.max(
        ...auditLines(auditDir)
          .filter((l) => l.chain === chainB)
          .map((l) => l.seq as number),
      );
      for (let i = 0; i < 5; i++)
        expect((await b.call('GET', '/v1/kv/dba/k')).status).to.equal(200);
      const envB = {
        ...pgEnv(schema),
        COFFER_DATA_DIR: b.config.data_dir,
        COFFER_MASTER_KEY_FILE: b.config.master_key_file,
      };
      await b.close();
      b = undefined;
      const before = await runCoffer(['audit', 'verify'], envB);
      expect(before.code, before.stdout + before.stderr).to.equal(0);

      await db.query(`UPDATE "${schema}".records SET v = $2 WHERE k = $1`, [recordKey, older]);
      await db.query(`DELETE FROM "${schema}".records WHERE k > $1 AND k < $2`, [
        auditLinesKey(chainB, seqThen),
        auditLinesRange(chainB).end,
      ]);
      const held = await runCoffer(['audit', 'verify'], envB);
      expect(held.code, held.stdout).to.equal(1);
      expect(held.stdout).to.include(`the store's copy of chain ${chainB} ends at seq`);
      expect(held.stdout).to.match(/^BROKEN: /m);
    } finally {
      await db.end();
    }
  });
});
