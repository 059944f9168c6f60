import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { intentCopies } from '../../src/audit/intent-recovery.js';
import { AuditRecords } from '../../src/store/audit-records.js';
import { intentJournalKey } from '../../src/store/layout.js';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { runCoffer } from '../support/process.js';
import { withStoreSeal } from '../support/store-seal.js';

describe('coffer audit archive', function () {
  this.timeout(60_000);

  it('moves whole, verified, finished files away and records it, so that verify passes and says what was archived', async () => {
    const dir = tempDir();
    const first = await startTestCoffer({ dataDir: dir });
    for (let i = 0; i < 20; i++) await first.put(`arch/k${i % 3}`, `v${i}`);
    await first.close();
    // The cut falls strictly between the two servers' lines: the clock has moved on either side of it.
    const closed = Date.now();
    await eventually(() => Date.now() > closed, { interval: 1 });
    const cut = new Date().toISOString();
    await eventually(() => Date.now() > Date.parse(cut), { interval: 1 });
    const second = await startTestCoffer({ dataDir: dir, rootToken: first.rootToken });
    for (let i = 0; i < 5; i++) await second.put(`arch/k${i}`, `w${i}`);
    await second.close();

    const auditDir = first.config.audit.dir!;
    const env = {
      COFFER_DATA_DIR: first.config.data_dir,
      COFFER_MASTER_KEY_FILE: first.config.master_key_file,
    };
    const before = readdirSync(auditDir);
    const hashes = new Map(
      before.map((name) => [
        name,
        createHash('sha256')
          .update(readFileSync(join(auditDir, name)))
          .digest('hex'),
      ]),
    );
    const to = join(dir, 'archive');

    const run = await runCoffer(['audit', 'archive', '--before', cut, '--to', to], env);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^archived 1 files \(\d+ entries, .* to .*\) of 1 chains to /);
    const moved = readdirSync(to);
    expect(moved).to.have.length(1);
    // Moved whole: the copy is the original, byte for byte, and the original is gone.
    expect(
      createHash('sha256')
        .update(readFileSync(join(to, moved[0]!)))
        .digest('hex'),
    ).to.equal(hashes.get(moved[0]!));
    expect(readdirSync(auditDir)).to.not.include(moved[0]);

    const verify = await runCoffer(['audit', 'verify'], env);
    expect(verify.code, verify.stdout + verify.stderr).to.equal(0);
    expect(verify.stdout).to.match(/^intact: /);
    expect(verify.stdout).to.match(
      new RegExp(
        `archived: 1 files with \\d+ entries up to .*, of 1 chains, moved to ${to} \\(recorded in the log\\)`,
      ),
    );
    // Versions written before the remaining log began are counted apart, not as uncovered.
    expect(verify.stdout).to.match(
      /covers: \d+ stored versions: .* [1-9]\d* created before the log begins/,
    );
    expect(verify.stdout).to.not.include('NOT COVERED');

    // Nothing more is old enough now; archiving again moves nothing.
    expect(
      (await runCoffer(['audit', 'archive', '--before', cut, '--to', to], env)).stdout,
    ).to.match(/^nothing to archive/);

    // Without the record of the archive, the missing file is a break, not something verify quietly accepts.
    const record = readdirSync(auditDir).filter((name) => !before.includes(name));
    expect(record).to.have.length(1);
    renameSync(join(auditDir, record[0]!), join(dir, record[0]!));
    const unrecorded = await runCoffer(['audit', 'verify'], env);
    expect(unrecorded.code).to.equal(1);
    expect(unrecorded.stdout).to.match(/^BROKEN: .*no archive records them/);
  });

  it('settles intent copies older than a minute before files leave, and leaves younger ones to their server', async () => {
    const dir = tempDir();
    const coffer = await startTestCoffer({ dataDir: dir });
    await coffer.put('arch/k', 'v');
    await coffer.close();
    const env = {
      COFFER_DATA_DIR: coffer.config.data_dir,
      COFFER_MASTER_KEY_FILE: coffer.config.master_key_file,
    };
    const copy = (ts: number, key: string): string =>
      JSON.stringify({
        seq: 9,
        chain: 'other-1-chain',
        ts: new Date(ts).toISOString(),
        prev: '0'.repeat(64),
        kind: 'intent',
        request_id: `req-${key}`,
        action: 'write',
        namespace: 'arch',
        key,
      });
    // Genuine copies, as a server writes them (authenticated with the record key).
    await withStoreSeal(
      join(coffer.config.data_dir, 'lmdb'),
      coffer.config.master_key_file,
      async (storage, seal) => {
        const genuine = (seq: number, line: string) => ({
          op: 'put' as const,
          key: intentJournalKey('other-1-chain', seq),
          value: seal.authenticate(
            'intent-copy',
            intentJournalKey('other-1-chain', seq),
            Buffer.from(line),
          ),
        });
        await storage.atomic([], () => ({
          writes: [
            genuine(9, copy(Date.now() - 2 * 3600_000, 'old')),
            genuine(10, copy(Date.now(), 'young')),
          ],
          result: undefined,
        }));
      },
    );
    const run = await runCoffer(
      ['audit', 'archive', '--before', new Date().toISOString(), '--to', join(dir, 'archive')],
      env,
    );
    expect(run.code, run.stderr).to.equal(0);
    const recovered = auditLines(coffer.config.audit.dir!).filter(
      (l) => l.event === 'audit.intent_recovered',
    );
    expect(recovered.map((l) => (l.intent as { key: string }).key)).to.deep.equal(['old']);
    const left = await withStoreSeal(
      join(coffer.config.data_dir, 'lmdb'),
      coffer.config.master_key_file,
      (storage, seal) => intentCopies(new AuditRecords(storage, seal)),
    );
    expect(left.map((c) => c.seq)).to.deep.equal([10]);
  });

  it('refuses a --before that is not a date, and archives nothing from a log that does not verify', async () => {
    const c = await startTestCoffer({ dataDir: tempDir() });
    await c.put('arch/x', 'v');
    await c.close();
    const env = {
      COFFER_DATA_DIR: c.config.data_dir,
      COFFER_MASTER_KEY_FILE: c.config.master_key_file,
    };
    const bad = await runCoffer(
      ['audit', 'archive', '--before', 'yesterday', '--to', tempDir()],
      env,
    );
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.include('--before yesterday: not an ISO 8601 date');
    const file = readdirSync(c.config.audit.dir!)[0]!;
    const path = join(c.config.audit.dir!, file);
    const lines = readFileSync(path, 'utf8').split('\n');
    lines[1] = lines[1]!.replace('"ts":"2', '"ts":"1');
    writeFileSync(path, lines.join('\n'));
    const to = tempDir();
    const refused = await runCoffer(
      ['audit', 'archive', '--before', '2999-01-01', '--to', to],
      env,
    );
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.include(
      'nothing archived: the log must verify before files leave it',
    );
    expect(readdirSync(to)).to.deep.equal([]);
  });
});
