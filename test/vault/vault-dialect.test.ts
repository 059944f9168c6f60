import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

/**
 * The requests Vault's clients send (the Vault CLI and External Secrets Operator, from their sources: a token
 * in X-Vault-Token, JSON without a Content-Type), answered in Vault's dialect (docs/vault-compatibility.md).
 */
describe("Vault's dialect under /vault/v1: KV v2, the token, sys", function () {
  this.timeout(60_000);
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer({
      env: { COFFER_VAULT_MOUNTS: 'secret,apps=teams/apps:config' },
    });
  });
  after(async () => {
    await c.close();
  });

  /** A request as Vault's Go client makes it: X-Vault-Token, and a JSON body without a Content-Type. */
  const vault = (method: string, path: string, token: string | null, json?: unknown) =>
    c.call(method, `/vault/v1/${path}`, {
      token: null,
      headers: token === null ? {} : { 'x-vault-token': token },
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    });

  it('writes and reads a secret as a JSON object, by version, with check-and-set refused as Vault refuses it (400)', async () => {
    const written = await vault('POST', 'secret/data/payments/db', c.rootToken, {
      data: { username: 'app', password: 'first' },
    });
    expect(written.status).to.equal(200);
    expect(written.body.data).to.include({ version: 1, destroyed: false, deletion_time: '' });
    expect(
      (
        await vault('PUT', 'secret/data/payments/db', c.rootToken, {
          data: { username: 'app', password: 'second' },
          options: { cas: 1 },
        })
      ).body.data.version,
    ).to.equal(2);
    const latest = await vault('GET', 'secret/data/payments/db', c.rootToken);
    expect(latest.status).to.equal(200);
    expect(latest.body.data.data).to.deep.equal({ username: 'app', password: 'second' });
    expect(latest.body.data.metadata.version).to.equal(2);
    expect(latest.body).to.include({ lease_id: '', renewable: false, lease_duration: 0 });
    const first = await vault('GET', 'secret/data/payments/db?version=1', c.rootToken);
    expect(first.body.data.data.password).to.equal('first');
    // The same key through Coffer's own API: the secret's JSON, a secret value.
    const native = await c.call('GET', '/v1/kv/payments/db');
    expect(native.body).to.include({ type: 'secret', version: 2 });
    expect(JSON.parse(native.body.value)).to.deep.equal({ username: 'app', password: 'second' });
    const stale = await vault('POST', 'secret/data/payments/db', c.rootToken, {
      data: { password: 'third' },
      options: { cas: 1 },
    });
    expect(stale.status).to.equal(400);
    expect(stale.body).to.deep.equal({
      errors: ['check-and-set parameter did not match the current version'],
    });
    const exists = await vault('POST', 'secret/data/payments/db', c.rootToken, {
      data: { password: 'third' },
      options: { cas: 0 },
    });
    expect(exists.status).to.equal(400);
  });

  it('answers a missing secret 404 {"errors":[]}, a bad token 401 and a forbidden type 403, each with errors', async () => {
    const missing = await vault('GET', 'secret/data/payments/none', c.rootToken);
    expect([missing.status, missing.body]).to.deep.equal([404, { errors: [] }]);
    expect(missing.headers.get('content-type')).to.match(/^application\/json/);
    const bad = await vault(
      'GET',
      'secret/data/payments/db',
      'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789zzzz',
    );
    expect(bad.status).to.equal(401);
    expect(bad.body.errors).to.have.length(1);
    const configReader = await c.token({ role: 'config-reader' });
    const refused = await vault('GET', 'secret/data/payments/db', configReader);
    expect(refused.status).to.equal(403);
    expect(refused.body.errors[0]).to.be.a('string');
    expect(refused.text).to.not.include('second');
    // A path Coffer does not serve under /vault/v1 is Vault's 404, and a dot segment its 400.
    const unknown = await vault('GET', 'nomount/data/a/b', c.rootToken);
    expect([unknown.status, unknown.body]).to.deep.equal([404, { errors: [] }]);
    // Token creation is not served, whatever the body: not taken for a login.
    for (const path of ['auth/token/create', 'auth/token/create-orphan']) {
      const made = await vault('POST', path, c.rootToken, { policies: ['reader'], ttl: '1h' });
      expect([path, made.status, made.body]).to.deep.equal([path, 404, { errors: [] }]);
    }
    const dots = await vault('GET', 'secret/data/payments/../db', c.rootToken);
    expect(dots.status).to.equal(400);
    expect(dots.body.errors[0]).to.include('"." or ".." segment');
    const encoded = await vault('GET', 'secret/data/payments%2F..%2Fdb', c.rootToken);
    expect(encoded.status).to.equal(400);
    // Coffer's own routes take no X-Vault-Token: the dialect is /vault/v1's alone.
    const native = await c.call('GET', '/v1/kv/payments/db', {
      token: null,
      headers: { 'x-vault-token': c.rootToken },
    });
    expect(native.status).to.equal(401);
    expect(native.headers.get('content-type')).to.match(/^application\/problem\+json/);
  });

  it("lists a folder (GET ?list=true, as the Go client does) and reads a secret's versions; a mount with a prefix maps into its namespace, with its type", async () => {
    const root = await vault('GET', 'secret/metadata/?list=true', c.rootToken);
    expect(root.body.data.keys).to.include('payments/');
    const folder = await vault('GET', 'secret/metadata/payments?list=true', c.rootToken);
    expect(folder.body.data.keys).to.deep.equal(['db']);
    const shape = await vault('GET', 'secret/subkeys/payments/db', c.rootToken);
    expect(shape.body.data.subkeys).to.deep.equal({ username: null, password: null });
    expect(shape.text).to.not.include('second');
    // A value nested far deeper than a request may be (written through Coffer's own API): shown to depth 32.
    let deep = '"leaf"';
    for (let i = 0; i < 5000; i++) deep = `{"a":${deep}}`;
    expect(
      (await c.call('PUT', '/v1/kv/payments/deep', { json: { value: deep, type: 'secret' } }))
        .status,
    ).to.equal(201);
    const deepShape = await vault('GET', 'secret/subkeys/payments/deep', c.rootToken);
    expect(deepShape.status).to.equal(200);
    let level = deepShape.body.data.subkeys;
    let levels = 0;
    while (level !== null) {
      level = level.a;
      levels++;
    }
    expect(levels).to.equal(32);
    const meta = await vault('GET', 'secret/metadata/payments/db', c.rootToken);
    expect(meta.body.data.current_version).to.equal(2);
    expect(Object.keys(meta.body.data.versions)).to.deep.equal(['1', '2']);
    expect((await vault('GET', 'secret/metadata/empty?list=true', c.rootToken)).status).to.equal(
      404,
    );
    // apps=teams/apps:config: apps/data/web/settings is teams/apps/web, key settings, a config value.
    expect(
      (await vault('POST', 'apps/data/web/settings', c.rootToken, { data: { color: 'blue' } }))
        .status,
    ).to.equal(200);
    const native = await c.call('GET', '/v1/kv/teams/apps/web/settings');
    expect(native.body.type).to.equal('config');
    const configReader = await c.token({ role: 'config-reader' });
    expect(
      (await vault('GET', 'apps/data/web/settings', configReader)).body.data.data,
    ).to.deep.equal({ color: 'blue' });
    // A top-level mount needs a namespace in the path.
    const oneSegment = await vault('GET', 'secret/data/lonely', c.rootToken);
    expect(oneSegment.status).to.equal(400);
    expect(oneSegment.body.errors[0]).to.include('secret/data/<namespace>/<key>');
  });

  it("writes a secret's custom_metadata as ESO's PushSecret does (replaced by POST, merged by PATCH, null removing), and refuses what Coffer does not keep", async () => {
    const root = c.rootToken;
    expect(
      (await vault('POST', 'secret/data/meta/pushed', root, { data: { a: '1' } })).status,
    ).to.equal(200);
    const set = await vault('POST', 'secret/metadata/meta/pushed', root, {
      custom_metadata: { 'managed-by': 'external-secrets', team: 'payments' },
    });
    expect(set.status, set.text).to.equal(204);
    const patched = await vault('PATCH', 'secret/metadata/meta/pushed', root, {
      custom_metadata: { team: null, env: 'prod' },
    });
    expect(patched.status, patched.text).to.equal(204);
    const read = (await vault('GET', 'secret/metadata/meta/pushed', root)).body.data;
    expect(read.custom_metadata).to.deep.equal({ 'managed-by': 'external-secrets', env: 'prod' });
    // Coffer's own version list shows the same.
    expect((await c.call('GET', '/v1/kv/meta/pushed/versions')).body.custom_metadata).to.deep.equal(
      {
        'managed-by': 'external-secrets',
        env: 'prod',
      },
    );
    for (const body of [
      { cas_required: 'yes' },
      { delete_version_after: '-1h' },
      { delete_version_after: '1500ms' },
      { delete_version_after: 'soon' },
      { delete_version_after: 1.5 },
      { custom_metadata: { 'bad name': 'x' } },
      { custom_metadata: { a: 1 } },
    ])
      expect(
        (await vault('POST', 'secret/metadata/meta/pushed', root, body)).status,
        JSON.stringify(body),
      ).to.equal(400);
    // delete_version_after as Vault takes it (seconds, or a Go duration, or days) and shows it (Go's form).
    for (const [given, shown] of [
      [90, '1m30s'],
      ['3600', '1h0m0s'],
      ['1h30m', '1h30m0s'],
      ['2d', '48h0m0s'],
      ['0.5m', '30s'],
      ['0s', '0s'],
    ] as const) {
      const set = await vault('POST', 'secret/metadata/meta/pushed', root, {
        delete_version_after: given,
      });
      expect(set.status, `${given}: ${set.text}`).to.equal(204);
      const now = (await vault('GET', 'secret/metadata/meta/pushed', root)).body.data;
      expect(now.delete_version_after, String(given)).to.equal(shown);
    }
    // PATCH needs the secret; POST keeps metadata for a secret not written yet (next test).
    expect(
      (await vault('PATCH', 'secret/metadata/meta/none', root, { max_versions: 2 })).status,
    ).to.equal(404);
  });

  it("keeps a new secret's metadata before its first version, as ESO's PushSecret writes it (metadata, then the data with cas 0)", async () => {
    const root = c.rootToken;
    // ESO's vault provider: read the secret (absent), write its metadata, then its data with cas 0.
    expect((await vault('GET', 'secret/data/meta/fresh', root)).status).to.equal(404);
    const meta = await vault('POST', 'secret/metadata/meta/fresh', root, {
      custom_metadata: { 'managed-by': 'external-secrets' },
    });
    expect(meta.status, meta.text).to.equal(204);
    const before = await vault('GET', 'secret/metadata/meta/fresh', root);
    expect(before.status, before.text).to.equal(200);
    expect(before.body.data).to.include({ current_version: 0, oldest_version: 0 });
    expect(before.body.data.versions).to.deep.equal({});
    expect(before.body.data.custom_metadata).to.deep.equal({ 'managed-by': 'external-secrets' });
    const absent = await vault('GET', 'secret/data/meta/fresh', root);
    expect([absent.status, absent.body]).to.deep.equal([404, { errors: [] }]);
    // Natively: not a key yet, not in the trash, nothing to undelete.
    const native = await c.call('GET', '/v1/kv/meta/fresh');
    expect(native.status).to.equal(404);
    expect(native.body.deleted_at).to.equal(undefined);
    const trash = (await c.call('GET', '/v1/kv/meta/?trash=true')).body.keys;
    expect(trash.map((k: { key: string }) => k.key)).not.to.include('fresh');
    expect((await c.call('POST', '/v1/kv/meta/fresh?undelete=true')).status).to.equal(404);
    const versions = await c.call('GET', '/v1/kv/meta/fresh/versions');
    expect(versions.status, versions.text).to.equal(200);
    expect(versions.body).to.deep.include({
      current_version: 0,
      versions: [],
      custom_metadata: { 'managed-by': 'external-secrets' },
    });
    expect(versions.body.deleted_at).to.equal(undefined);
    // Vault's delete of versions of a secret that is not there is done: 204, as Vault answers.
    expect(
      (await vault('POST', 'secret/delete/meta/never', root, { versions: [1] })).status,
    ).to.equal(204);
    const written = await vault('POST', 'secret/data/meta/fresh', root, {
      data: { token: 't1' },
      options: { cas: 0 },
    });
    expect(written.status, written.text).to.equal(200);
    expect(written.body.data.version).to.equal(1);
    const after = (await vault('GET', 'secret/metadata/meta/fresh', root)).body.data;
    expect(after).to.include({ current_version: 1 });
    expect(after.custom_metadata).to.deep.equal({ 'managed-by': 'external-secrets' });
    // A key destroyed before numbers on from its counter, its metadata kept first all the same.
    await vault('POST', 'secret/data/meta/again', root, { data: { a: '1' } });
    await vault('POST', 'secret/data/meta/again', root, { data: { a: '2' } });
    expect((await vault('DELETE', 'secret/metadata/meta/again', root)).status).to.equal(204);
    await vault('POST', 'secret/metadata/meta/again', root, { max_versions: 3 });
    const third = await vault('POST', 'secret/data/meta/again', root, { data: { a: '3' } });
    expect(third.body.data.version).to.equal(3);
    const list = (await c.call('GET', '/v1/kv/meta/again/versions')).body;
    expect(list.versions.map((v: { version: number }) => v.version)).to.deep.equal([3]);
    expect(list.max_versions).to.equal(3);
    expect((await c.call('GET', '/v1/kv/meta/again?version=3')).status).to.equal(200);
  });

  it("cas_required in a secret's metadata: a write or a patch without options.cas is 400 in Vault's words; with it, taken", async () => {
    const root = c.rootToken;
    await vault('POST', 'secret/data/meta/guarded', root, { data: { a: '1' } });
    const set = await vault('POST', 'secret/metadata/meta/guarded', root, { cas_required: true });
    expect(set.status, set.text).to.equal(204);
    expect(
      (await vault('GET', 'secret/metadata/meta/guarded', root)).body.data.cas_required,
    ).to.equal(true);
    for (const method of ['POST', 'PATCH']) {
      const bare = await vault(method, 'secret/data/meta/guarded', root, { data: { a: '2' } });
      expect(bare.status, method).to.equal(400);
      expect(bare.body.errors, method).to.deep.equal([
        'check-and-set parameter required for this call',
      ]);
    }
    expect((await c.call('GET', '/v1/kv/meta/guarded/versions')).body.current_version).to.equal(1);
    const written = await vault('POST', 'secret/data/meta/guarded', root, {
      data: { a: '2' },
      options: { cas: 1 },
    });
    expect(written.status, written.text).to.equal(200);
    const patched = await vault('PATCH', 'secret/data/meta/guarded', root, {
      data: { b: '3' },
      options: { cas: 2 },
    });
    expect(patched.status, patched.text).to.equal(200);
    expect((await vault('GET', 'secret/data/meta/guarded', root)).body.data.data).to.deep.equal({
      a: '2',
      b: '3',
    });
    // PATCH merges the metadata: cas_required stays until set false.
    await vault('PATCH', 'secret/metadata/meta/guarded', root, { max_versions: 5 });
    expect((await c.call('GET', '/v1/kv/meta/guarded/versions')).body).to.include({
      cas_required: true,
      max_versions: 5,
    });
  });

  it('audits each request like a native one: vault.* actions naming the Coffer namespace and key, a write with its intent', async () => {
    const reader = await c.token({ role: 'reader', metadata: { name: 'eso' } });
    await vault('GET', 'secret/data/payments/db', reader);
    const readLine = () =>
      auditLines(c.config.audit.dir!).find(
        (l) => l.action === 'vault.read' && l.token_name === 'eso' && l.kind === 'request',
      );
    await eventually(() => readLine() !== undefined);
    expect(readLine()).to.include({ namespace: 'payments', key: 'db', version: 2 });
    const lines = auditLines(c.config.audit.dir!);
    const writes = lines.filter((l) => l.action === 'vault.write' && l.kind === 'request');
    expect(writes.length).to.be.at.least(2);
    expect(lines.some((l) => l.kind === 'intent' && l.key === 'settings')).to.equal(true);
    // Every stored version is named by its write's entry.
    const verified = await c.verifyLog();
    expect(verified.intact).to.equal(true);
  });

  it('serves the token lookup ESO checks (type, ttl, expire_time; never the token), renew-self and revoke-self', async () => {
    const token = await c.token({ role: 'reader', expires_in: 3600 });
    const looked = await vault('GET', 'auth/token/lookup-self', token);
    expect(looked.status).to.equal(200);
    expect(looked.body.data).to.include({ type: 'service', renewable: true });
    expect(looked.body.data.ttl).to.be.within(3500, 3600);
    expect(Date.parse(looked.body.data.expire_time)).to.be.greaterThan(Date.now());
    expect(looked.body.data.policies).to.deep.equal(['reader']);
    expect(looked.body.data.orphan).to.equal(true);
    expect(looked.text).to.not.include(token);
    // A delegated token is revoked with the token that made it: Vault calls that not an orphan.
    const parent = await c.token({ role: 'admin', expires_in: 3600 });
    const made = await c.call('POST', '/v1/auth/token', {
      token: parent,
      json: { role: 'reader', expires_in: 600 },
    });
    expect(made.status, made.text).to.equal(201);
    const child = String(made.body.token);
    expect((await vault('GET', 'auth/token/lookup-self', child)).body.data.orphan).to.equal(false);
    const childRenewed = await vault('POST', 'auth/token/renew-self', child, {});
    expect(childRenewed.body.auth.orphan).to.equal(false);
    // Authorization: Bearer is taken there too.
    expect((await c.call('GET', '/vault/v1/auth/token/lookup-self', { token })).status).to.equal(
      200,
    );
    const renewed = await vault('POST', 'auth/token/renew-self', token, { increment: '1h' });
    expect(renewed.status, renewed.text).to.equal(200);
    expect(renewed.body.auth).to.include({
      client_token: '',
      renewable: true,
      token_type: 'service',
      orphan: true,
    });
    expect(renewed.body.auth.lease_duration).to.be.within(3590, 3600);
    expect(renewed.text).to.not.include(token);
    expect((await vault('POST', 'auth/token/revoke-self', token)).status).to.equal(204);
    expect((await vault('GET', 'auth/token/lookup-self', token)).status).to.equal(401);
  });

  it('answers sys/health and seal-status without a token, and the mounts the Vault CLI asks for with one', async () => {
    const health = await vault('GET', 'sys/health', null);
    expect(health.status).to.equal(200);
    expect(health.body).to.include({ initialized: true, sealed: false, standby: false });
    // The status per state Vault's health takes (node-vault and load balancers send them).
    const chosen = await vault(
      'GET',
      'sys/health?standbyok=true&activecode=299&sealedcode=503',
      null,
    );
    expect(chosen.status).to.equal(299);
    const seal = await vault('GET', 'sys/seal-status', null);
    expect(seal.body).to.include({ sealed: false, initialized: true, type: 'shamir' });
    const ui = await vault('GET', 'sys/internal/ui/mounts/secret/payments/db', c.rootToken);
    expect(ui.body.data).to.deep.include({
      path: 'secret/',
      type: 'kv',
      options: { version: '2' },
    });
    expect((await vault('GET', 'sys/internal/ui/mounts/nope/x', c.rootToken)).status).to.equal(404);
    expect((await vault('GET', 'sys/internal/ui/mounts/secret/x', null)).status).to.equal(401);
    const mounts = await vault('GET', 'sys/mounts', c.rootToken);
    expect(Object.keys(mounts.body.data).sort()).to.deep.equal(['apps/', 'secret/']);
  });

  it('shows a token only the mounts it may use, as Vault does: the metrics role none, a scoped token its own', async () => {
    const metrics = await c.token({ role: 'metrics' });
    const listed = await vault('GET', 'sys/mounts', metrics);
    expect(listed.status).to.equal(200);
    expect(Object.keys(listed.body.data)).to.deep.equal([]);
    expect(JSON.stringify(listed.body)).to.not.include('teams/apps');
    expect((await vault('GET', 'sys/internal/ui/mounts/secret/x', metrics)).status).to.equal(403);
    expect((await vault('GET', 'sys/internal/ui/mounts/apps/x', metrics)).status).to.equal(403);
    // A token scoped to namespaces outside the apps mount's prefix sees the top-level mount only.
    const scoped = await c.token({ scopes: [{ namespace: 'other/*', read: true }] });
    expect(Object.keys((await vault('GET', 'sys/mounts', scoped)).body.data)).to.deep.equal([
      'secret/',
    ]);
    expect((await vault('GET', 'sys/internal/ui/mounts/secret/x', scoped)).status).to.equal(200);
    expect((await vault('GET', 'sys/internal/ui/mounts/apps/web', scoped)).status).to.equal(403);
  });

  it('refuses at start a mount list that is not of the form COFFER_VAULT_MOUNTS takes, naming the variable', () => {
    for (const [mounts, says] of [
      ['secret,secret', /^COFFER_VAULT_MOUNTS: a vault mount is named twice/],
      ['sys', /^COFFER_VAULT_MOUNTS: vault mount sys: the name is Vault's own/],
      ['Secret', /^COFFER_VAULT_MOUNTS \(item 1\): invalid value/],
      ['secret,apps=teams//apps', /^COFFER_VAULT_MOUNTS \(item 2\): invalid value/],
    ] as const)
      expect(() => loadConfig({ COFFER_VAULT_MOUNTS: mounts }), mounts).to.throw(says);
    expect(
      loadConfig({ COFFER_VAULT_MOUNTS: 'secret,apps=teams/apps:config' }).vault.mounts,
    ).to.deep.equal(['secret', 'apps=teams/apps:config']);
  });
});
