import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Packr } from 'msgpackr';
import type { StorageBackend } from '../../src/storage/backend.js';
import { versionKey } from '../../src/store/layout.js';
import { sealReport } from '../../src/store/seal-report.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { runCoffer } from '../support/process.js';
import { seedStore } from '../support/seed.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

async function edit(
  storage: StorageBackend,
  key: Buffer,
  change: (record: Record<string, unknown>) => Record<string, unknown> | Buffer,
): Promise<void> {
  const bytes = await storage.get(key);
  const next = change(bytes ? (packr.unpack(bytes) as Record<string, unknown>) : {});
  await storage.atomic([], () => ({
    writes: [{ op: 'put', key, value: Buffer.isBuffer(next) ? next : packr.pack(next) }],
    result: undefined,
  }));
}

describe('the seal report', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  const marker = `sealed-${Date.now()}`;

  before(async () => {
    c = await startTestCoffer();
    env = { COFFER_DATA_DIR: c.config.data_dir, COFFER_MASTER_KEY_FILE: c.config.master_key_file };
    for (let i = 0; i < 4; i++)
      expect((await c.put(`apps/web/s${i}`, `${marker}-web-${i}`)).status).to.equal(201);
    await c.put('apps/web/cfg', `${marker}-cfg`, 'config');
    expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
    await c.put('apps/web/s0', `${marker}-web-0b`);
    for (let i = 0; i < 3; i++) await c.put(`db/s${i}`, `${marker}-db-${i}`);
  });
  after(async () => {
    await c.close();
  });

  it('counts sealed secrets per keyring version and namespace, with no anomalies on an untouched store', async () => {
    const res = await c.call('GET', '/v1/sys/seal-report');
    expect(res.status).to.equal(200);
    const r = res.body;
    expect(r.verified).to.equal(false);
    expect(r.totals).to.deep.equal({
      versions: 9,
      secrets: 8,
      configs: 1,
      sealed_secrets: 8,
      anomalies: 0,
      record_failures: 0,
    });
    expect(r.records.find((k: { kind: string }) => k.kind === 'root-token')).to.deep.equal({
      kind: 'root-token',
      records: 1,
      failed: 0,
    });
    expect(r.records.map((k: { kind: string }) => k.kind)).to.deep.equal([
      'root-token',
      'token',
      'audit-chain',
      'intent-copy',
      'audit-lines',
      'kv-meta',
      'kv-counter',
      'kv-trash',
      'keyring-generation',
      'rewrap-state',
      'audit-count',
      'policies',
      'console-session',
      'event',
      'event-position',
      'webhook',
      'webhook-cursor',
      'webhook-lease',
    ]);
    // Every change made an event, each checked: the 9 writes of the 8 keys and the keyring's rotation,
    // and the position's record.
    expect(r.records.find((k: { kind: string }) => k.kind === 'event-position')).to.deep.equal({
      kind: 'event-position',
      records: 1,
      failed: 0,
    });
    expect(r.records.find((k: { kind: string }) => k.kind === 'event')).to.deep.equal({
      kind: 'event',
      records: 10,
      failed: 0,
    });
    expect(r.records.find((k: { kind: string }) => k.kind === 'keyring-generation')).to.deep.equal({
      kind: 'keyring-generation',
      records: 1,
      failed: 0,
    });
    expect(r.records.find((k: { kind: string }) => k.kind === 'kv-meta')).to.deep.equal({
      kind: 'kv-meta',
      records: 8,
      failed: 0,
    });
    expect(r.keyring.active_version).to.equal(2);
    expect(
      r.keyring.versions.map(
        (v: { version: number; secrets: number; configs: number; active: boolean }) => [
          v.version,
          v.secrets,
          v.configs,
          v.active,
        ],
      ),
    ).to.deep.equal([
      [1, 4, 1, false],
      [2, 4, 0, true],
    ]);
    expect(r.namespaces).to.deep.equal([
      { namespace: 'apps/web', secrets: 5, configs: 1 },
      { namespace: 'db', secrets: 3, configs: 0 },
    ]);
    expect(r.anomalies).to.deep.equal([]);
    expect(res.text).not.to.include(marker);

    const verified = (await c.call('GET', '/v1/sys/seal-report?verify=true')).body;
    expect(verified).to.deep.include({ verified: true });
    expect(verified.totals).to.deep.equal(r.totals);
    expect((await c.call('GET', '/v1/sys/seal-report?verify=maybe')).status).to.equal(400);
  });

  it('coffer audit seal-report prints a table (exit 0), or the same report as JSON', async () => {
    const table = await runCoffer(['audit', 'seal-report'], env);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.match(
      /9 versions: 8 secret, 1 config; 8 of 8 secrets sealed; 0 anomalies/,
    );
    expect(table.stdout).to.match(/^2 \(active\)\s+\S+\s+4\s+0$/m);
    expect(table.stdout).to.match(/^apps\/web\s+5\s+1$/m);
    expect(table.stdout).to.include('no anomalies: every secret version is sealed');
    const json = await runCoffer(['audit', 'seal-report', '--json', '--verify'], env);
    expect(json.code).to.equal(0);
    const report = JSON.parse(json.stdout);
    expect(report).to.deep.include({ verified: true });
    expect(report.totals.sealed_secrets).to.equal(8);
    expect(table.stdout + table.stderr + json.stdout + json.stderr).not.to.include(marker);
  });

  it('makes the structure-only report without the master key; --verify needs it; no key is ever created', async () => {
    const keyless = { ...env, COFFER_MASTER_KEY_FILE: join(tempDir(), 'absent.key') };
    const table = await runCoffer(['audit', 'seal-report'], keyless);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.match(
      /9 versions: 8 secret, 1 config; 8 of 8 secrets sealed; 0 anomalies/,
    );
    expect(table.stdout).to.match(/^2\s+\(needs the key\)\s+4\s+0$/m);
    expect(table.stdout).to.include('made without the master key');
    const verify = await runCoffer(['audit', 'seal-report', '--verify'], keyless);
    expect(verify.code).to.equal(2);
    expect(verify.stderr).to.include('there is no master key file');
    expect(existsSync(keyless.COFFER_MASTER_KEY_FILE)).to.equal(false);
  });

  it('refuses to report on a store that is not there, creating nothing', async () => {
    const missing = join(tempDir(), 'nothing-here');
    const res = await runCoffer(['audit', 'seal-report'], {
      COFFER_DATA_DIR: missing,
      COFFER_MASTER_KEY_FILE: join(missing, 'master.key'),
    });
    expect(res.code).to.equal(2);
    expect(res.stderr).to.include(`no Coffer store at ${missing}`);
    expect(existsSync(missing)).to.equal(false);
    const verify = await runCoffer(['audit', 'verify'], {
      COFFER_DATA_DIR: missing,
      COFFER_MASTER_KEY_FILE: join(missing, 'master.key'),
      COFFER_AUDIT_DIR: c.config.audit.dir!,
    });
    expect(verify.code).to.equal(2);
    expect(existsSync(missing)).to.equal(false);
  });

  it('lists each kind of anomaly, and --verify catches what structure cannot', async () => {
    const { storage } = c;
    await edit(storage, versionKey('db', 's0', 1), (r) => ({ ...r, v: `${marker}-leaked` }));
    await edit(storage, versionKey('db', 's1', 1), (r) => ({ ...r, kv: 99 }));
    await edit(storage, versionKey('db', 's2', 1), (r) => {
      const c2 = Buffer.from(r.c as Uint8Array);
      c2[3]! ^= 0x01;
      return { ...r, c: c2 };
    });
    await edit(storage, versionKey('apps/web', 's1', 1), (r) => {
      const { n: _dropped, ...rest } = r;
      return rest;
    });
    await edit(storage, versionKey('apps/web', 's2', 1), () => Buffer.from('not a record'));
    // A version of a key that does not exist (a delete that left a version behind).
    const orphan = await storage.get(versionKey('apps/web', 's3', 1));
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key: versionKey('apps/web', 'gone', 1), value: Buffer.from(orphan!) }],
      result: undefined,
    }));

    // A deleted key's versions, kept in the trash, are a deleted key's: no anomaly.
    await c.put('apps/web/trashed', 'kept');
    expect((await c.call('DELETE', '/v1/kv/apps/web/trashed')).status).to.equal(204);

    const r = (await c.call('GET', '/v1/sys/seal-report')).body;
    const problems = Object.fromEntries(
      r.anomalies.map((a: { namespace: string; key: string; problem: string }) => [
        `${a.namespace}/${a.key}`,
        a.problem,
      ]),
    );
    expect(problems['db/s0']).to.match(/^PLAINTEXT/);
    expect(problems['db/s1']).to.match(/keyring version 99 is not in the keyring/);
    expect(problems['apps/web/s1']).to.match(/value's nonce is missing/);
    expect(problems['apps/web/s2']).to.match(/unreadable/);
    expect(problems['apps/web/gone']).to.match(/no key, live or deleted/);
    expect(problems).not.to.have.property('db/s2'); // a flipped ciphertext bit has the right shape
    expect(problems).not.to.have.property('apps/web/trashed');
    expect(r.totals.anomalies).to.equal(5);
    expect(JSON.stringify(r)).not.to.include(marker);

    const verified = (await c.call('GET', '/v1/sys/seal-report?verify=true')).body;
    const about = (ns: string, key: string): string[] =>
      verified.anomalies
        .filter((a: { namespace: string; key: string }) => a.namespace === ns && a.key === key)
        .map((a: { problem: string }) => a.problem);
    expect(about('db', 's2')).to.deep.equal([
      'INTEGRITY: does not decrypt (altered, moved, or sealed under another key)',
    ]);
    // The copied record was sealed for another key's identity, so it does not open here either.
    expect(about('apps/web', 'gone')).to.have.length(2);
    expect(verified.totals.anomalies).to.equal(7);

    const cli = await runCoffer(['audit', 'seal-report', '--verify'], env);
    expect(cli.code).to.equal(1);
    expect(cli.stdout).to.include('ANOMALIES (7):');
    expect(cli.stdout).to.match(/db\/s0 v1: PLAINTEXT/);
    expect(cli.stdout + cli.stderr).not.to.include(marker);
  });

  it("covers the store's own records: a plain one is reported without the key, a changed one with --verify", async () => {
    const own = await startTestCoffer();
    try {
      const token = await own.token({ role: 'reader' });
      const tokenKey = Buffer.from(`T${token.slice(4, 20)}`);
      const { storage } = own;
      const sealed = Buffer.from((await storage.get(tokenKey))!);
      const flipped = Buffer.from(sealed);
      flipped[flipped.length - 1]! ^= 0x01;
      await storage.atomic([], () => ({
        writes: [{ op: 'put', key: tokenKey, value: flipped }],
        result: undefined,
      }));
      const tokens = (report: { records: { kind: string }[] }): unknown =>
        report.records.find((k) => k.kind === 'token');
      // The changed record still has the sealed form: only opening it shows the change.
      expect(tokens((await own.call('GET', '/v1/sys/seal-report')).body)).to.deep.equal({
        kind: 'token',
        records: 1,
        failed: 0,
      });
      const verified = (await own.call('GET', '/v1/sys/seal-report?verify=true')).body;
      expect(tokens(verified)).to.deep.equal({ kind: 'token', records: 1, failed: 1 });
      expect(verified.totals.record_failures).to.equal(1);
      // A record written in plain (as before the barrier, or by hand) fails even the structure-only check.
      await storage.atomic([], () => ({
        writes: [
          {
            op: 'put',
            key: tokenKey,
            value: packr.pack({ id: token.slice(4, 20), hash: 'x', role: 'admin' }),
          },
        ],
        result: undefined,
      }));
      expect(tokens((await own.call('GET', '/v1/sys/seal-report')).body)).to.deep.equal({
        kind: 'token',
        records: 1,
        failed: 1,
      });
      const ownEnv = {
        COFFER_DATA_DIR: own.config.data_dir,
        COFFER_MASTER_KEY_FILE: own.config.master_key_file,
      };
      const cli = await runCoffer(['audit', 'seal-report'], ownEnv);
      expect(cli.code).to.equal(1);
      expect(cli.stdout).to.match(/token\s+1\s+1/);
      expect(cli.stdout).to.include('RECORD FAILURES (1)');
    } finally {
      await own.close();
    }
  });

  it('reports progress over a large store and counts every record', async () => {
    const big = await startTestCoffer();
    try {
      const seeded = await seedStore(big.storage, big.app.keyring.current(), 3000);
      const calls: [number, number][] = [];
      const report = await sealReport(big.storage, big.app.keyring.current(), {
        verify: true,
        now: Date.now(),
        onProgress: (done, total) => calls.push([done, total]),
      });
      expect(report.totals.versions).to.equal(seeded.length);
      expect(report.totals.anomalies).to.equal(0);
      expect(report.totals.sealed_secrets).to.equal(
        seeded.filter((s) => s.type === 'secret').length,
      );
      expect(calls.length).to.be.greaterThan(5);
      expect(calls.at(-1)).to.deep.equal([seeded.length, seeded.length]);
      expect(calls.every(([done, total]) => total === seeded.length && done <= total)).to.equal(
        true,
      );
    } finally {
      await big.close();
    }
  });
});
