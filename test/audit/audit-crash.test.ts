import { join } from 'node:path';
import { expect } from 'chai';
import { intentCopies } from '../../src/audit/intent-recovery.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { parseVersionKey, VERSIONS_RANGE } from '../../src/store/layout.js';
import { type AuditLine, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { send } from '../support/http-client.js';
import { killAll, runCoffer, serveSettings, startProcess } from '../support/process.js';
import { withStoreSeal } from '../support/store-seal.js';

describe('every committed change has its audit entry, even after kill -9', function () {
  this.timeout(180_000);

  it('kills two workers under write load four times; every stored version is named by an entry, and verify says so', async () => {
    const { dir, root, env } = serveSettings(2);
    for (let round = 0; round < 4; round++) {
      const p = await startProcess(env);
      let stop = false;
      let answered = 0;
      const writers = Array.from({ length: 64 }, async (_, w) => {
        for (let i = 0; !stop; i++) {
          await send(p.url, 'PUT', `/v1/kv/crash/r${round}/k${(w + i) % 40}`, root, {
            value: `v${w}-${i}`,
            type: i % 2 ? 'secret' : 'config',
          })
            .then(() => answered++)
            .catch(() => (stop = true));
          if (i % 25 === 24)
            await send(p.url, 'DELETE', `/v1/kv/crash/r${round}/k${w % 40}`, root).catch(
              () => (stop = true),
            );
        }
      });
      try {
        // Each round is killed further into its load (more writes answered).
        await eventually(() => answered >= 200 * (round + 1), { timeout: 30_000, what: 'writes' });
      } finally {
        // Killed and its writers ended even when the wait fails: nothing is left running.
        await killAll(p);
        stop = true;
        await Promise.all(writers);
      }
    }
    // The next start cuts back a file a killed process left ending in part of a line (a write of several
    // pages cut short by the kill; audit/tail-repair.ts), then is stopped: the state an operator inspects.
    await (await startProcess(env)).stop();

    // Every stored (namespace, key, version) is named by its write's request entry, or by the intent entry of
    // a write whose request entry never came (its process was killed between the commit and that entry):
    // in a file, put back from the store by a later start (audit.intent_recovered), or, after the last kill,
    // still only in the store as the copy committed with the change.
    const lines = auditLines(join(dir, 'data', 'audit'));
    const copies = await withStoreSeal(
      join(dir, 'data', 'lmdb'),
      join(dir, 'master.key'),
      async (s, seal) =>
        (await intentCopies(new AuditRecords(s, seal))).map((c) => JSON.parse(c.line) as AuditLine),
    );
    const storage = new LmdbBackend({ path: join(dir, 'data', 'lmdb') });
    const intents = [
      ...lines,
      ...lines
        .filter((l) => l.event === 'audit.intent_recovered')
        .map((l) => l.intent as AuditLine),
      ...copies,
    ];
    const answered = new Set(lines.filter((l) => l.kind === 'request').map((l) => l.request_id));
    const named = new Set(
      lines
        .filter((l) => l.kind === 'request' && l.action === 'write' && l.version !== undefined)
        .map((l) => `${l.namespace}/${l.key}@${l.version}`),
    );
    const openIntent = new Set(
      intents
        .filter((l) => l.kind === 'intent' && l.action === 'write' && !answered.has(l.request_id))
        .map((l) => `${l.namespace}/${l.key}`),
    );
    const missing: string[] = [];
    let stored = 0;
    try {
      for await (const entry of storage.scan(VERSIONS_RANGE)) {
        const { namespace, key, version } = parseVersionKey(entry.key);
        stored++;
        if (!named.has(`${namespace}/${key}@${version}`) && !openIntent.has(`${namespace}/${key}`))
          missing.push(`${namespace}/${key}@${version}`);
      }
    } finally {
      await storage.close();
    }
    expect(stored).to.be.greaterThan(50);
    expect(missing).to.deep.equal([]);

    const verify = await runCoffer(['audit', 'verify'], env);
    expect(verify.stdout, verify.stdout).to.match(/^intact: /);
    const covers =
      /covers: (\d+) stored versions: (\d+) named by their write's entry, (\d+) by the intent entry of a write cut off before its own entry, 0 created before the log begins/.exec(
        verify.stdout,
      );
    expect(covers, verify.stdout).to.not.equal(null);
    expect(Number(covers![1])).to.equal(stored);
    expect(Number(covers![2]) + Number(covers![3])).to.equal(stored);
    expect(verify.stdout).to.not.include('NOT COVERED');
    expect(verify.code).to.equal(0);
  });

  it('loses no entry of an answered read when the processes are killed right after the answers (reads do not wait for a sync)', async () => {
    const { dir, root, env } = serveSettings(2, {
      COFFER_AUDIT_SYNC_MS: '1000',
    });
    const p = await startProcess(env);
    await send(p.url, 'PUT', '/v1/kv/reads/k', root, { value: 'v', type: 'secret' });
    const answered: string[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 25; i++) {
          const reply = await send(
            p.url,
            'GET',
            i % 5 === 0 ? '/v1/kv/reads/missing' : '/v1/kv/reads/k',
            root,
          );
          answered.push(String(reply.headers['x-request-id']));
        }
      }),
    );
    // Killed at once: with a one-second sync window, most of these lines were never synced, only written.
    await killAll(p);
    const ids = new Set(
      auditLines(join(dir, 'data', 'audit'))
        .filter((l) => l.kind === 'request')
        .map((l) => l.request_id),
    );
    expect(answered).to.have.length(400);
    expect(answered.filter((id) => !ids.has(id))).to.deep.equal([]);
  });
});
