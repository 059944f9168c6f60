import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { chainKeysOf } from '../../src/audit/chain-keys.js';
import { storedChains } from '../../src/audit/database-copy.js';
import { auditFilesIn } from '../../src/audit/files.js';
import { intentCopies } from '../../src/audit/intent-recovery.js';
import { verifyAudit } from '../../src/audit/verify.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { auditLinesRange, intentJournalKey } from '../../src/store/layout.js';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import type { TestCoffer } from '../support/harness.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { runCoffer } from '../support/process.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';

describe('The audit log of several servers on one PostgreSQL database', function () {
  this.timeout(60_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  let schema: string;
  let a: TestCoffer;
  let b: TestCoffer;
  beforeEach(async () => {
    schema = testSchema();
    a = await startTestCoffer({ env: pgEnv(schema) });
    // B checkpoints often, as a busy server would: the store then records how far B's chain reaches.
    b = await secondServer(a, schema, undefined, { COFFER_AUDIT_CHECKPOINT_EVERY: '2' });
  });
  afterEach(async () => {
    await b.close();
    await a.close();
  });

  /** A's offline verification: its own files, and with `stored` the chains the store keeps. */
  async function verifyOnA(withStored: boolean) {
    const { audit } = a.app.records;
    return verifyAudit(auditFilesIn(a.config.audit.dir!), {
      keys: chainKeysOf(a.app.keyring.current()),
      registry: await audit.chains(),
      ...(withStored ? { stored: await storedChains(audit) } : {}),
      now: Date.now(),
    });
  }

  it("shows every server's entries on any server, and verifies a chain whose files are on another host from the store", async () => {
    expect((await b.put('fleet/from-b', 'value-b')).status).to.equal(201);
    expect((await a.put('fleet/from-a', 'value-a')).status).to.equal(201);
    // B's write, searched on A: its request entry is in the store within audit.sync_ms, as in B's file
    // (the write's intent entry was durable in both before B answered).
    let found = await a.call('GET', '/v1/sys/audit?key=fleet/from-b&action=write');
    await eventually(async () => {
      found = await a.call('GET', '/v1/sys/audit?key=fleet/from-b&action=write');
      return found.body.entries.length > 0;
    });
    expect(found.status).to.equal(200);
    expect(found.body.entries).to.have.length(1);
    const entry = found.body.entries[0];
    expect(entry).to.include({ namespace: 'fleet', key: 'from-b', version: 1 });
    const bChain = auditFilesIn(b.config.audit.dir!)[0]!.match(/audit-(.+)-1\.jsonl$/)![1];
    expect(entry.chain).to.equal(bChain);
    // A read on B reaches A's search within audit.sync_ms.
    expect((await b.call('GET', '/v1/kv/fleet/from-a')).status).to.equal(200);
    await eventually(async () => {
      const reads = await a.call('GET', '/v1/sys/audit?key=fleet/from-a&action=read');
      return reads.body.entries.some((e: { chain: string }) => e.chain === bChain);
    });

    // Verify on A covers both servers' chains and every stored version (B's write included).
    const verified = await a.call('GET', '/v1/sys/audit/verify');
    expect(verified.status).to.equal(200);
    expect(verified.body).to.include({ intact: true });
    expect(verified.body.chains).to.be.at.least(2);
    expect(verified.body.coverage).to.include({ uncovered_count: 0, by_request: 2 });
    expect(await verifyOnA(true)).to.include({ intact: true });
    // Without the store's copy, B's chain would be a chain with no files: reported as broken.
    const filesOnly = await verifyOnA(false);
    expect(filesOnly.intact).to.equal(false);
  });

  it("leaves another server's newest intent copies alone at start-up, and puts back only those left long ago", async () => {
    const { storage } = a;
    const { keyring } = a.app;
    const copy = (chain: string, agoMs: number) => {
      const key = intentJournalKey(chain, 1);
      const line = JSON.stringify({
        seq: 1,
        ts: new Date(Date.now() - agoMs).toISOString(),
        chain,
        kind: 'intent',
        action: 'write',
        request_id: `req-${chain}`,
        namespace: 'fleet',
        key: 'k',
      });
      return {
        op: 'put' as const,
        key,
        value: keyring.recordSeal.authenticate('intent-copy', key, Buffer.from(line)),
      };
    };
    // A peer's copy made just now (its line is on its way into that peer's file), and one from a peer that
    // stopped two minutes ago without syncing its line.
    await storage.atomic([], () => ({
      writes: [copy('peer-live-chain', 0), copy('peer-gone-chain', 120_000)],
      result: undefined,
    }));
    a = await a.restart();
    const left = await intentCopies(new AuditRecords(a.storage, a.app.keyring.recordSeal));
    expect(left.map((c) => c.chain)).to.deep.equal(['peer-live-chain']);
    const recovered = auditLines(a.config.audit.dir!).filter(
      (l) => l.event === 'audit.intent_recovered',
    );
    expect(recovered.map((l) => l.from_chain)).to.deep.equal(['peer-gone-chain']);
  });

  it("reports a run of the store's copy that a database administrator changed, and never shows its content", async () => {
    expect((await b.put('fleet/tampered', 'v')).status).to.equal(201);
    const client = new pg.Client({ connectionString: PG_TEST_URL });
    await client.connect();
    try {
      const { rowCount } = await client.query(
        // One bit flipped (a byte set to 0 left it as it was when it was 0 already: 1 run in 256).
        `UPDATE "${schema}".records SET v = set_byte(v, length(v) - 3, get_byte(v, length(v) - 3) # 1)
         WHERE k = (SELECT k FROM "${schema}".records WHERE substr(k, 1, 1) = 'L'::bytea ORDER BY k DESC LIMIT 1)`,
      );
      expect(rowCount).to.equal(1);
    } finally {
      await client.end();
    }
    const result = await verifyOnA(true);
    expect(result.intact).to.equal(false);
    if (!result.intact) expect(result.reason).to.match(/failed its integrity check/);
    const verified = await a.call('GET', '/v1/sys/audit/verify');
    expect(verified.body.intact).to.equal(false);
  });

  it("archives one host's old files and the store's copy of them with them; every host still verifies", async () => {
    for (let i = 0; i < 10; i++) expect((await a.put(`fleet/k${i}`, `v${i}`)).status).to.equal(201);
    expect((await b.put('fleet/from-b', 'value-b')).status).to.equal(201);
    const oldChain = auditFilesIn(a.config.audit.dir!)[0]!.match(/audit-(.+)-1\.jsonl$/)![1]!;
    // A stops (its chain ends) and starts again: its first chain's files are finished.
    a = await a.restart();
    const restarted = Date.now(); // the cut falls after every line of the first chain
    await eventually(() => Date.now() > restarted, { interval: 1 });
    const cut = new Date().toISOString();
    const runsOf = async (chain: string) => {
      let runs = 0;
      for await (const _ of a.storage.scan(auditLinesRange(chain))) runs++;
      return runs;
    };
    expect(await runsOf(oldChain)).to.be.above(0);
    const bChain = auditFilesIn(b.config.audit.dir!)[0]!.match(/audit-(.+)-1\.jsonl$/)![1]!;
    const bRuns = await runsOf(bChain);

    const run = await runCoffer(
      ['audit', 'archive', '--before', cut, '--to', join(tempDir(), 'archive')],
      {
        ...pgEnv(schema),
        COFFER_DATA_DIR: a.config.data_dir,
        COFFER_AUDIT_DIR: a.config.audit.dir!,
        COFFER_MASTER_KEY_FILE: a.config.master_key_file,
        COFFER_LOG_LEVEL: 'silent',
      },
    );
    expect(run.code, run.stdout + run.stderr).to.equal(0);
    expect(run.stdout).to.match(
      /^archived 1 files .* the store's copy of them \(\d+ records\) removed/,
    );
    expect(await runsOf(oldChain)).to.equal(0);
    // B's chain is not A's to archive: its copy stays whole.
    expect(await runsOf(bChain)).to.be.at.least(bRuns);
    // B, whose directory never held A's files, reads the archive's record from the store's copy.
    for (const server of [a, b]) {
      const verified = await server.call('GET', '/v1/sys/audit/verify');
      expect(verified.body, JSON.stringify(verified.body)).to.include({ intact: true });
    }
  });
});
