import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { dropTestSchemas, requirePostgres, testSchema } from '../support/postgres.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';

const opsRole = {
  rules: [
    {
      namespaces: ['payments/*'],
      actions: ['read', 'list', 'write', 'delete'],
      types: ['config', 'secret'],
    },
  ],
};

describe('roles managed at runtime (/v1/sys/roles)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer({
      env: {},
      start: {},
    });
    await c.put('payments/db_password', 'pw');
    await c.put('payments/region', 'eu', 'config');
    await c.put('billing/db_password', 'bpw');
  });
  after(async () => {
    await c?.close();
  });

  it('creates, reads, lists, replaces and deletes a role; root only', async () => {
    const created = await c.call('PUT', '/v1/sys/roles/payments-ops', { json: opsRole });
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.include({ name: 'payments-ops', source: 'runtime' });
    expect(created.body.rules).to.deep.equal(opsRole.rules);
    expect(created.body.privileges).to.deep.equal([]);
    expect((await c.call('PUT', '/v1/sys/roles/payments-ops', { json: opsRole })).status).to.equal(
      200,
    );
    const list = await c.call('GET', '/v1/sys/roles');
    const names = list.body.roles.map((r: { name: string }) => r.name);
    expect(names).to.include.members(['admin', 'reader', 'config-reader', 'payments-ops']);
    expect(list.body.roles.find((r: { name: string }) => r.name === 'admin')).to.deep.include({
      source: 'built-in',
      privileges: ['create_tokens'],
    });
    const admin = await c.token({ role: 'admin' });
    expect((await c.call('GET', '/v1/sys/roles', { token: admin })).status).to.equal(403);
    expect(
      (await c.call('PUT', '/v1/sys/roles/x', { token: admin, json: opsRole })).status,
    ).to.equal(403);
    expect((await c.call('DELETE', '/v1/sys/roles/payments-ops')).status).to.equal(204);
    expect((await c.call('GET', '/v1/sys/roles/payments-ops')).status).to.equal(404);
  });

  it('applies a change to the tokens holding the role at once, and refuses built-in roles', async () => {
    await c.call('PUT', '/v1/sys/roles/payments-ops', { json: opsRole });
    const token = await c.token({ role: 'payments-ops' });
    expect((await c.call('GET', '/v1/kv/payments/db_password', { token })).status).to.equal(200);
    expect((await c.call('GET', '/v1/kv/billing/db_password', { token })).status).to.equal(403);
    const configOnly = {
      rules: [{ namespaces: ['payments/*'], actions: ['read', 'list'], types: ['config'] }],
    };
    expect(
      (await c.call('PUT', '/v1/sys/roles/payments-ops', { json: configOnly })).status,
    ).to.equal(200);
    expect((await c.call('GET', '/v1/kv/payments/db_password', { token })).status).to.equal(403);
    expect((await c.call('GET', '/v1/kv/payments/region', { token })).status).to.equal(200);

    for (const name of ['admin', 'reader', 'root']) {
      const res = await c.call('PUT', `/v1/sys/roles/${name}`, { json: opsRole });
      expect(res.status, name).to.equal(400);
      expect((await c.call('DELETE', `/v1/sys/roles/${name}`)).status, name).to.be.oneOf([
        400, 404,
      ]);
    }
    const bad = await c.call('PUT', '/v1/sys/roles/bad', {
      json: { rules: [{ namespaces: ['pay*ments'], actions: ['read'], types: ['config'] }] },
    });
    expect(bad.status).to.equal(400);
    const manage = await c.call('PUT', '/v1/sys/roles/bad', {
      json: { ...opsRole, privileges: ['manage_keyring'] },
    });
    expect(manage.status).to.equal(400);
  });

  it('refuses to delete a role live tokens hold, with their count, unless forced; then those tokens are refused', async () => {
    await c.call('PUT', '/v1/sys/roles/temp-role', { json: opsRole });
    const tokens = [await c.token({ role: 'temp-role' }), await c.token({ role: 'temp-role' })];
    const refused = await c.call('DELETE', '/v1/sys/roles/temp-role');
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('conflict');
    expect(refused.body.detail).to.include('2 live token(s)');
    expect((await c.call('GET', '/v1/auth/me', { token: tokens[0] })).status).to.equal(200);
    expect((await c.call('DELETE', '/v1/sys/roles/temp-role?force=true')).status).to.equal(204);
    for (const token of tokens)
      expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);
    // Listed as what they are — refused, their role gone — not as active, and still listed to be revoked.
    const ids = tokens.map((t) => t.split('_')[1]);
    const statuses = async () =>
      ((await c.call('GET', '/v1/auth/tokens')).body.tokens as { id: string; status: string }[])
        .filter((t) => ids.includes(t.id))
        .map((t) => t.status);
    expect(await statuses()).to.deep.equal(['role_deleted', 'role_deleted']);
    // A role of the same name made again does not bring those tokens back.
    expect((await c.call('PUT', '/v1/sys/roles/temp-role', { json: opsRole })).status).to.equal(
      201,
    );
    for (const token of tokens)
      expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);
    expect(await statuses()).to.deep.equal(['role_deleted', 'role_deleted']);
    expect(
      (await c.call('GET', '/v1/auth/me', { token: await c.token({ role: 'temp-role' }) })).status,
    ).to.equal(200);
  });

  it('refuses to delete a role a login role names unless forced', async () => {
    await c.call('PUT', '/v1/sys/roles/ci-role', { json: opsRole });
    const put = await c.call('PUT', '/v1/sys/login-roles/ci', {
      json: {
        issuer: 'https://token.actions.githubusercontent.com',
        discovery: true,
        bound_audiences: ['coffer'],
        role: 'ci-role',
      },
    });
    expect(put.status, put.text).to.equal(201);
    const refused = await c.call('DELETE', '/v1/sys/roles/ci-role');
    expect(refused.status).to.equal(409);
    expect(refused.body.detail).to.include('login role(s) "ci"');
  });
});

describe('token management without root (create_tokens)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let lead: string;
  before(async () => {
    c = await startTestCoffer();
    await c.call('PUT', '/v1/sys/roles/team-lead', {
      json: { ...opsRole, privileges: ['create_tokens'] },
    });
    lead = await c.token({ role: 'team-lead', expires_in: 3600, metadata: { name: 'lead' } });
    await c.put('payments/db_password', 'pw');
    await c.put('billing/db_password', 'bpw');
  });
  after(async () => {
    await c?.close();
  });

  const create = (token: string, json: Record<string, unknown>) =>
    c.call('POST', '/v1/auth/token', { token, json });

  it('creates tokens with at most its own rights, as its children', async () => {
    const child = await create(lead, {
      scopes: [{ namespace: 'payments/api', read: true }],
      expires_in: 600,
      metadata: { name: 'api', team: 'payments' },
    });
    expect(child.status, child.text).to.equal(201);
    expect(child.body.parent).to.match(/^[A-Za-z0-9]+$/);
    const me = await c.call('GET', '/v1/auth/me', { token: lead });
    expect(child.body.parent).to.equal(me.body.id);
    for (const [json, status] of [
      [{ scopes: [{ namespace: 'billing', read: true }] }, 403],
      [{ scopes: [{ namespace: '*', read: true }] }, 403],
      [{ role: 'reader' }, 403],
      [{ role: 'admin' }, 403],
      [{ role: 'team-lead', expires_in: 7200 }, 400],
    ] as const) {
      const res = await create(lead, json);
      expect(res.status, JSON.stringify(json)).to.equal(status);
    }
    // Its own role, within its expiry: allowed (the child may create in turn).
    const same = await create(lead, { role: 'team-lead', expires_in: 600 });
    expect(same.status).to.equal(201);
    const grandchild = await create(same.body.token, {
      scopes: [{ namespace: 'payments/*', read: true }],
      expires_in: 300,
    });
    expect(grandchild.status).to.equal(201);
    // The built-in admin holds create_tokens by default.
    const admin = await c.token({ role: 'admin' });
    expect((await create(admin, { role: 'reader', expires_in: 60 })).status).to.equal(201);
  });

  it('lists only the tokens it created and theirs; revokes only those', async () => {
    const mine = await create(lead, {
      scopes: [{ namespace: 'payments', read: true }],
      expires_in: 60,
    });
    const other = await c.token({ role: 'reader' });
    const list = await c.call('GET', '/v1/auth/tokens', { token: lead });
    expect(list.status).to.equal(200);
    const ids = list.body.tokens.map((t: { id: string }) => t.id);
    expect(ids).to.include(mine.body.id);
    const otherId = (await c.call('GET', '/v1/auth/me', { token: other })).body.id;
    expect(ids).to.not.include(otherId);
    expect((await c.call('DELETE', `/v1/auth/token/${otherId}`, { token: lead })).status).to.equal(
      403,
    );
    expect(
      (await c.call('DELETE', `/v1/auth/token/${mine.body.id}`, { token: lead })).status,
    ).to.equal(204);
    expect((await c.call('GET', '/v1/auth/me', { token: mine.body.token })).status).to.equal(401);
  });

  it('revokes the tokens a token created, and theirs, with it', async () => {
    const parent = await create(lead, { role: 'team-lead', expires_in: 900 });
    const child = await create(parent.body.token, { role: 'team-lead', expires_in: 600 });
    const grandchild = await create(child.body.token, {
      scopes: [{ namespace: 'payments', read: true }],
      expires_in: 300,
    });
    for (const t of [parent, child, grandchild])
      expect((await c.call('GET', '/v1/auth/me', { token: t.body.token })).status).to.equal(200);
    const revoked = await c.call('DELETE', `/v1/auth/token/${parent.body.id}`);
    expect(revoked.status).to.equal(204);
    for (const t of [parent, child, grandchild])
      expect((await c.call('GET', '/v1/auth/me', { token: t.body.token })).status).to.equal(401);
    // Each revocation is in the audit log: the request's intent names the ones taken with it.
    const intent = await c.call(
      'GET',
      `/v1/sys/audit?token_id=${grandchild.body.id}&action=token.revoke`,
    );
    expect(intent.body.entries.length).to.be.greaterThan(0);
    const verified = await c.verifyLog();
    expect(verified.intact).to.equal(true);
  });

  it('revoke-self takes the tokens it created with it', async () => {
    const parent = await create(lead, { role: 'team-lead', expires_in: 900 });
    // Without expires_in: the server's default, cut to what the creating token has left.
    const child = await create(parent.body.token, {
      scopes: [{ namespace: 'payments', read: true }],
    });
    expect(child.status, child.text).to.equal(201);
    expect(Date.parse(child.body.expires_at)).to.be.at.most(Date.parse(parent.body.expires_at));
    expect(
      (await c.call('POST', '/v1/auth/token/revoke-self', { token: parent.body.token })).status,
    ).to.equal(204);
    expect((await c.call('GET', '/v1/auth/me', { token: child.body.token })).status).to.equal(401);
  });
});

describe('a role changed on one server is enforced by another on the same PostgreSQL database', function () {
  this.timeout(60_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  it('within a second', async () => {
    const schema = testSchema();
    const a = await startTestCoffer({ env: pgEnv(schema) });
    const b = await secondServer(a, schema);
    try {
      await a.put('payments/db_password', 'pw');
      expect((await a.call('PUT', '/v1/sys/roles/ops', { json: opsRole })).status).to.equal(201);
      const token = await a.token({ role: 'ops' });
      await eventually(
        async () => (await b.call('GET', '/v1/kv/payments/db_password', { token })).status === 200,
        { timeout: 2000, what: 'B knowing the new role' },
      );
      const narrowed = await a.call('PUT', '/v1/sys/roles/ops', {
        json: { rules: [{ namespaces: ['billing'], actions: ['read'], types: ['config'] }] },
      });
      expect(narrowed.status).to.equal(200);
      const took = await eventually(
        async () => (await b.call('GET', '/v1/kv/payments/db_password', { token })).status === 403,
        { timeout: 2000, interval: 10, what: 'B enforcing the narrowed role' },
      );
      expect(took).to.be.lessThan(1000);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
