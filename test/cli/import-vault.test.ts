import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { command } from '../support/process.js';

/** A KV v2 export as the script in docs/vault-compatibility.md makes it: one version a line. */
function exportOf(versions: Record<string, unknown>[]): string {
  return `${versions.map((v) => JSON.stringify({ deletion_time: '', destroyed: false, ...v })).join('\n')}\n`;
}

describe('coffer import vault: a Vault KV v2 export copied in, every version, checked after', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  let dir: string;
  before(async () => {
    c = await startTestCoffer({ env: { COFFER_VAULT_MOUNTS: 'secret' } });
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken };
    dir = tempDir();
  });
  after(async () => {
    await c?.close();
  });

  it('writes every version in order, leaves destroyed ones out, deletes what Vault had deleted, and reads each back', async () => {
    const file = join(dir, 'export.ndjson');
    writeFileSync(
      file,
      exportOf([
        // Out of order in the file: written in version order.
        { path: 'app/db', version: 2, data: { user: 'app', pw: 'two' } },
        { path: 'app/db', version: 1, data: { user: 'app', pw: 'one' } },
        { path: 'app/api', version: 1, data: null, destroyed: true },
        { path: 'app/api', version: 2, data: { token: 'kept' } },
        { path: 'old', version: 1, data: { x: '1' } },
        { path: 'old', version: 2, data: null, deletion_time: '2026-01-01T00:00:00Z' },
      ]),
    );
    const run = await command(['import', 'vault', file, '--into', 'migrated'], env);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.equal(
      'imported 3 secrets, 4 versions (2 without data in the export, destroyed or deleted, left out); read back: 4 as written\n',
    );
    const v1 = await c.call('GET', '/v1/kv/migrated/app/db?version=1');
    expect([v1.body.type, JSON.parse(v1.body.value)]).to.deep.equal([
      'secret',
      { user: 'app', pw: 'one' },
    ]);
    expect(JSON.parse((await c.call('GET', '/v1/kv/migrated/app/db')).body.value).pw).to.equal(
      'two',
    );
    expect((await c.call('GET', '/v1/kv/migrated/app/api/versions')).body.current_version).to.equal(
      1,
    );
    // Deleted in Vault: in Coffer's trash, its version kept.
    expect((await c.call('GET', '/v1/kv/migrated/old')).status).to.equal(404);
    expect((await c.call('GET', '/v1/kv/migrated/?trash=true')).body.keys).to.have.length(1);
    // The same secret through Coffer's Vault mount, as a Vault client would read it.
    const viaVault = await c.call('GET', '/vault/v1/secret/data/migrated/app/db', {
      token: null,
      headers: { 'X-Vault-Token': c.rootToken },
    });
    expect(viaVault.body.data.data).to.deep.equal({ user: 'app', pw: 'two' });
    // Each write audited, and no value in the command's output or the log.
    const writes = auditLines(c.config.audit.dir!).filter(
      (l) =>
        l.kind === 'request' && l.action === 'write' && String(l.namespace).startsWith('migrated'),
    );
    expect(writes).to.have.length(4);
    expect(`${run.stdout}${run.stderr}`).to.not.include('two');
  });

  it('writes nothing when a line or a name is wrong, or a key is already there', async () => {
    const bad = join(dir, 'bad.ndjson');
    writeFileSync(
      bad,
      `${exportOf([
        { path: 'ok/k', version: 1, data: { a: 1 } },
        { path: 'bad name/k', version: 1, data: { a: 1 } },
        { path: 'ok/j', version: 0, data: { a: 1 } },
      ])}not json\n`,
    );
    const refused = await command(['import', 'vault', bad, '--into', 'nothing'], env);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('line 3: version must be a whole number from 1');
    expect(refused.stderr).to.include('line 4: not JSON');
    expect(refused.stderr).to.include('bad name/k: not a Coffer name');
    expect(refused.stderr).to.include('nothing was imported');
    expect((await c.call('GET', '/v1/kv/nothing/ok/k')).status).to.equal(404);

    await c.put('taken/k', 'mine');
    const clash = join(dir, 'clash.ndjson');
    writeFileSync(
      clash,
      exportOf([
        { path: 'fresh', version: 1, data: { a: 1 } },
        { path: 'k', version: 1, data: { a: 2 } },
      ]),
    );
    const taken = await command(['import', 'vault', clash, '--into', 'taken'], env);
    expect(taken.code).to.equal(6);
    expect(taken.stderr).to.equal('coffer: already there, nothing was imported: taken/k\n');
    expect((await c.call('GET', '/v1/kv/taken/fresh')).status).to.equal(404);
    expect((await c.call('GET', '/v1/kv/taken/k')).body.value).to.equal('mine');
  });
});
