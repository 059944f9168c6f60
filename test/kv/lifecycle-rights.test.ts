import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { dropTestSchemas, requirePostgres, testSchema } from '../support/postgres.js';
import { pgEnv } from '../support/shared-servers.js';

/**
 * A setting that prunes, destroys or deletes needs the right that doing it directly needs: the built-in
 * `writer` (read, list, write; no delete) may not erase history through a key's metadata, native or
 * through Vault's metadata path; and metadata kept for a key not yet written binds only a value of the type
 * it was kept for.
 */
const MOUNTS = { COFFER_VAULT_MOUNTS: 'secret,cfg=cfgs:config' };

function lifecycleTests(start: () => Promise<TestCoffer>): void {
  let c: TestCoffer;
  let writer: string;
  let configWriter: string;
  before(async () => {
    c = await start();
    writer = await c.token({ role: 'writer' });
    const role = await c.call('PUT', '/v1/sys/roles/config-writer', {
      json: {
        rules: [{ namespaces: ['*'], actions: ['read', 'list', 'write'], types: ['config'] }],
      },
    });
    expect(role.status, role.text).to.be.oneOf([200, 201]);
    configWriter = await c.token({ role: 'config-writer' });
  });
  after(async () => {
    await c?.close();
  });

  const versions = async (path: string): Promise<number[]> =>
    (await c.call('GET', `/v1/kv/${path}/versions`)).body.versions.map(
      (v: { version: number }) => v.version,
    );

  it('a writer cannot tighten max_versions or set delete_version_after (403, nothing changed); an admin can', async () => {
    for (const v of ['1', '2', '3']) await c.put('hist/db', v);
    for (const json of [
      { max_versions: 1 },
      { delete_version_after: 1 },
      { max_versions: 1, custom_metadata: { a: 'b' } },
    ]) {
      const res = await c.call('PATCH', '/v1/kv/hist/db', { token: writer, json });
      expect(res.status, JSON.stringify(json)).to.equal(403);
      expect(res.body.detail).to.match(/delete secret keys in hist/);
    }
    // Nothing was half-set: the writer's next write prunes nothing and deletes nothing.
    await c.put('hist/db', '4', 'secret', writer);
    expect(await versions('hist/db')).to.deep.equal([1, 2, 3, 4]);
    const meta = (await c.call('GET', '/v1/kv/hist/db/versions')).body;
    expect([meta.max_versions, meta.delete_version_after, meta.custom_metadata]).to.deep.equal([
      0,
      0,
      {},
    ]);
    // What erases nothing more stays a writer's: its own fields, cas_required, a looser limit.
    const admin = await c.token({ role: 'admin' });
    expect(
      (await c.call('PATCH', '/v1/kv/hist/db', { token: admin, json: { max_versions: 3 } })).status,
    ).to.equal(200);
    for (const json of [
      { custom_metadata: { owner: 'ops' } },
      { cas_required: false },
      { max_versions: 3 },
      { max_versions: 10 },
      { max_versions: 0 },
    ])
      expect(
        (await c.call('PATCH', '/v1/kv/hist/db', { token: writer, json })).status,
        JSON.stringify(json),
      ).to.equal(200);
    expect(
      (await c.call('PATCH', '/v1/kv/hist/db', { token: writer, json: { max_versions: 9 } }))
        .status,
    ).to.equal(403);
  });

  it("through Vault's metadata path the same: POST, PUT and PATCH of max_versions or delete_version_after are 403 to a writer", async () => {
    await c.put('vhist/db', 'one');
    await c.put('vhist/db', 'two');
    for (const [method, body] of [
      ['POST', { max_versions: 1 }],
      ['PUT', { delete_version_after: '1s' }],
      ['PATCH', { max_versions: 1 }],
    ] as const) {
      const res = await c.call(method, '/vault/v1/secret/metadata/vhist/db', {
        headers: {
          'x-vault-token': writer,
          ...(method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}),
        },
        token: null,
        ...(method === 'PATCH' ? { body: JSON.stringify(body) } : { json: body }),
      });
      expect(res.status, `${method} ${res.text}`).to.equal(403);
    }
    await c.put('vhist/db', 'three', 'secret', writer);
    expect(await versions('vhist/db')).to.deep.equal([1, 2, 3]);
  });

  it('metadata kept for a key not yet written binds only a value of its type: a config writer cannot set the lifecycle of a secret written later', async () => {
    // The config writer may keep metadata for a config key it could write...
    const kept = await c.call('POST', '/vault/v1/cfg/metadata/app/future', {
      headers: { 'x-vault-token': configWriter },
      token: null,
      json: { cas_required: true, custom_metadata: { planted: 'yes' } },
    });
    expect(kept.status, kept.text).to.equal(204);
    // ...but not one that erases: that is a deletion it has no right to.
    const erasing = await c.call('POST', '/vault/v1/cfg/metadata/app/future2', {
      headers: { 'x-vault-token': configWriter },
      token: null,
      json: { max_versions: 1, delete_version_after: '3s' },
    });
    expect(erasing.status, erasing.text).to.equal(403);
    // Root's secret at that key does not take it on: no 428 without cas, nothing planted.
    const put = await c.call('PUT', '/v1/kv/cfgs/app/future', {
      json: { value: 'root-secret', type: 'secret' },
    });
    expect(put.status, put.text).to.equal(201);
    await c.put('cfgs/app/future', 'root-secret-2');
    const meta = (await c.call('GET', '/v1/kv/cfgs/app/future/versions')).body;
    expect([meta.cas_required, meta.custom_metadata]).to.deep.equal([false, {}]);
    expect(meta.versions.map((v: { version: number }) => v.version)).to.deep.equal([1, 2]);
    // A config value there takes the metadata kept for it, as Vault's metadata-first clients expect.
    await c.call('POST', '/vault/v1/cfg/metadata/app/later', {
      headers: { 'x-vault-token': configWriter },
      token: null,
      json: { cas_required: true },
    });
    expect(
      (await c.call('PUT', '/v1/kv/cfgs/app/later', { json: { value: 'c', type: 'config' } }))
        .status,
    ).to.equal(428);
  });
}

describe('the lifecycle settings of a key need the right to delete it', function () {
  this.timeout(60_000);
  describe('on LMDB', () => {
    lifecycleTests(() => startTestCoffer({ env: MOUNTS }));
  });
  describe('on PostgreSQL', () => {
    before(async function () {
      await requirePostgres(this);
    });
    lifecycleTests(() => startTestCoffer({ env: { ...pgEnv(testSchema()), ...MOUNTS } }));
    after(async () => {
      await dropTestSchemas();
    });
  });
});
