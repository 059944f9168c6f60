import { readFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { intentCopies } from '../../src/audit/intent-recovery.js';
import { generateToken } from '../../src/auth/token-format.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { intentJournalKey } from '../../src/store/layout.js';
import { auditFiles, auditLines } from '../support/audit-lines.js';
import { type DatasyncProbe, probeDatasyncs } from '../support/datasync-probe.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { killAll, runCoffer, startProcess } from '../support/process.js';
import { withStoreSeal } from '../support/store-seal.js';

/** The intent copies in the store of a stopped server in `dir` (envOf's layout). */
function copiesIn(dir: string): Promise<Awaited<ReturnType<typeof intentCopies>>> {
  return withStoreSeal(join(dir, 'data', 'lmdb'), join(dir, 'master.key'), (storage, seal) =>
    intentCopies(new AuditRecords(storage, seal)),
  );
}

describe('intents are committed with their changes: one sync for both', function () {
  this.timeout(60_000);

  describe('in one process', () => {
    // The audit writer's syncs, observed from outside; LMDB syncs in native code and is not counted.
    let probe: DatasyncProbe;
    let auditSyncs: number[];
    before(async () => {
      probe = await probeDatasyncs();
      auditSyncs = probe.times;
    });
    after(() => probe.restore());

    it('acknowledges a change without syncing the audit file; the intent is in the file and its copy in the store until the file is synced', async () => {
      const coffer = await startTestCoffer({ env: { COFFER_AUDIT_SYNC_MS: '1000' } });
      try {
        const changes: [string, string, unknown, number][] = [
          ['PUT', '/v1/kv/journal/a', { value: 'value-1', type: 'secret' }, 201],
          ['PUT', '/v1/kv/journal/a', { value: 'value-2', type: 'secret' }, 200],
          ['DELETE', '/v1/kv/journal/a', undefined, 204],
          ['POST', '/v1/auth/token', { role: 'reader' }, 201],
        ];
        const synced: boolean[] = [];
        for (const [method, path, json, status] of changes) {
          const started = performance.now();
          expect(
            (await coffer.call(method, path, json === undefined ? {} : { json })).status,
          ).to.equal(status);
          const answered = performance.now();
          synced.push(auditSyncs.some((t) => t >= started && t <= answered));
        }
        // Before, every change synced its intent on its own, then the store synced the change. Now only
        // the timed sync (once a second) may fall within one of them.
        expect(synced.filter(Boolean).length, JSON.stringify(synced)).to.be.at.most(1);

        const copies = await intentCopies(
          new AuditRecords(coffer.storage, coffer.app.keyring.recordSeal),
        );
        const lines = readFileSync(
          auditFiles(join(coffer.dataDir, 'data', 'audit'))[0]!,
          'utf8',
        ).split('\n');
        const intents = lines.filter((l) => l.includes('"kind":"intent"'));
        expect(intents.map((l) => JSON.parse(l).action)).to.deep.equal([
          'write',
          'write',
          'delete',
          'token.create',
        ]);
        // The copies are the exact lines in the file: the same hash chain, the same request ids.
        expect(copies.map((c) => c.line)).to.deep.equal(intents);
        expect(copies.map((c) => c.seq)).to.deep.equal(intents.map((l) => JSON.parse(l).seq));
      } finally {
        await coffer.close();
      }
    });

    it('deletes the copies once the audit file is synced past them', async () => {
      const coffer = await startTestCoffer({ env: { COFFER_AUDIT_SYNC_MS: '20' } });
      try {
        for (let i = 0; i < 5; i++)
          expect((await coffer.put(`journal/k${i}`, 'v')).status).to.equal(201);
        expect(
          (await intentCopies(new AuditRecords(coffer.storage, coffer.app.keyring.recordSeal)))
            .length,
        ).to.be.greaterThan(0);
        await eventually(
          async () =>
            (await intentCopies(new AuditRecords(coffer.storage, coffer.app.keyring.recordSeal)))
              .length === 0,
          { interval: 100, what: 'no intent copy left' },
        );
      } finally {
        await coffer.close();
      }
    });

    it('leaves no copy behind after a clean stop', async () => {
      const coffer = await startTestCoffer({ env: { COFFER_AUDIT_SYNC_MS: '1000' } });
      const data = join(coffer.dataDir, 'data');
      await coffer.put('journal/b', 'v');
      const restarted = await coffer.restart();
      try {
        expect(
          await intentCopies(new AuditRecords(restarted.storage, restarted.app.keyring.recordSeal)),
        ).to.deep.equal([]);
        expect(
          auditLines(join(data, 'audit')).filter((l) => l.event === 'audit.intent_recovered'),
        ).to.deep.equal([]);
      } finally {
        await restarted.close();
      }
    });
  });

  describe('after the process is killed', () => {
    const root = generateToken().value;
    const envOf = (dir: string): Record<string, string> => ({
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'master.key'),
      COFFER_ROOT_TOKEN: root,
      COFFER_WORKERS: '1',
      COFFER_AUDIT_SYNC_MS: '1000',
    });

    /** Writes three versions and deletes one key, then kill -9: the intents' copies are still in the store. */
    async function writeAndKill(dir: string): Promise<void> {
      const p = await startProcess(envOf(dir));
      for (const [i, key] of ['a', 'b', 'c'].entries()) {
        expect(
          (await send(p.url, 'PUT', `/v1/kv/lost/${key}`, root, { value: `v${i}`, type: 'secret' }))
            .status,
        ).to.equal(201);
      }
      expect((await send(p.url, 'DELETE', '/v1/kv/lost/c?destroy=true', root)).status).to.equal(
        204,
      );
      await killAll(p);
    }

    it('only deletes the copies at the next start when the file holds their lines', async () => {
      const dir = tempDir();
      await writeAndKill(dir);
      expect(await copiesIn(dir)).to.have.length(4);
      const p = await startProcess(envOf(dir));
      await p.stop();
      expect(await copiesIn(dir)).to.deep.equal([]);
      expect(
        auditLines(join(dir, 'data', 'audit')).filter((l) => l.event === 'audit.intent_recovered'),
      ).to.deep.equal([]);
    });

    it('reports a copy the store holds in damaged or forged form, never its content, instead of failing to start or to verify', async () => {
      const dir = tempDir();
      await writeAndKill(dir);
      // A forged copy is a well-formed intent line written without the record key's MAC.
      const forged = JSON.stringify({
        seq: 8,
        chain: 'mangled-1-chain',
        ts: new Date().toISOString(),
        prev: '0'.repeat(64),
        kind: 'intent',
        request_id: 'forged',
        action: 'write',
        namespace: 'planted',
        key: 'k',
      });
      const storage = new LmdbBackend({ path: join(dir, 'data', 'lmdb') });
      try {
        await storage.atomic([], () => ({
          writes: [
            {
              op: 'put',
              key: intentJournalKey('mangled-1-chain', 7),
              value: Buffer.from('{"kind":"int'),
            },
            { op: 'put', key: intentJournalKey('mangled-1-chain', 8), value: Buffer.from(forged) },
          ],
          result: undefined,
        }));
      } finally {
        await storage.close();
      }
      // Before a server starts again, verify reports the killed server's chain as open — and is not
      // thrown by the copies.
      const verify = await runCoffer(['audit', 'verify'], envOf(dir));
      expect(verify.code, verify.stderr).to.equal(1);
      expect(verify.stdout).to.match(
        /not covered by a checkpoint, and its server has not made one/,
      );
      const p = await startProcess(envOf(dir));
      await p.stop();
      const closed = await runCoffer(['audit', 'verify'], envOf(dir));
      expect(closed.stdout, closed.stdout).to.match(/^intact: /);
      const recovered = auditLines(join(dir, 'data', 'audit')).filter(
        (l) => l.event === 'audit.intent_recovered',
      );
      expect(recovered.map((l) => [l.from_chain, l.from_seq, l.intent])).to.deep.equal([
        ['mangled-1-chain', 7, { unreadable: true, bytes: 12 }],
        ['mangled-1-chain', 8, { unreadable: true, bytes: Buffer.byteLength(forged) }],
      ]);
      expect(await copiesIn(dir)).to.deep.equal([]);
    });

    it('puts intents a power loss took from the file back into the log at the next start, and verify counts them before and after', async () => {
      const dir = tempDir();
      await writeAndKill(dir);
      const audit = join(dir, 'data', 'audit');
      // A power loss takes the file's unsynced tail: with a 1 s sync window, everything after the last
      // synced entry. Cut the file back to just before its first intent (no checkpoint lies after it).
      const file = auditFiles(audit).find((f) =>
        readFileSync(f, 'utf8').includes('"kind":"intent"'),
      );
      const text = readFileSync(file!, 'utf8');
      const firstIntent = text.lastIndexOf('\n', text.indexOf('"kind":"intent"')) + 1;
      expect(text.slice(firstIntent)).to.not.include('"kind":"checkpoint"');
      truncateSync(file!, Buffer.byteLength(text.slice(0, firstIntent)));
      const copies = await copiesIn(dir);
      expect(copies).to.have.length(4);

      // Before any server starts again, verify finds the writes' intents in the store (and the killed
      // server's chain open).
      const before = await runCoffer(['audit', 'verify'], envOf(dir));
      expect(before.code).to.equal(1);
      expect(before.stdout).to.match(
        /covers: 2 stored versions: 0 named by their write's entry, 2 by the intent entry/,
      );
      expect(before.stdout).to.not.include('NOT COVERED');

      const p = await startProcess(envOf(dir));
      await p.stop();
      expect(await copiesIn(dir)).to.deep.equal([]);
      const recovered = auditLines(audit).filter((l) => l.event === 'audit.intent_recovered');
      expect(recovered.map((l) => l.from_seq)).to.deep.equal(copies.map((c) => c.seq));
      expect(recovered.map((l) => JSON.stringify(l.intent))).to.deep.equal(
        copies.map((c) => c.line),
      );
      expect(recovered.map((l) => (l.intent as { action: string }).action)).to.deep.equal([
        'write',
        'write',
        'write',
        'destroy',
      ]);

      const after = await runCoffer(['audit', 'verify'], envOf(dir));
      expect(after.stdout).to.match(/^intact: /);
      expect(after.stdout).to.match(
        /covers: 2 stored versions: 0 named by their write's entry, 2 by the intent entry/,
      );
      expect(after.stdout).to.not.include('NOT COVERED');
    });
  });
});
