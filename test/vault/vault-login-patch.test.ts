import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { TestIssuer } from '../support/jwt-issuer.js';

/** Vault's JWT and Kubernetes logins (vault-action, GitLab CI, ESO) and `vault kv patch`, in its dialect. */
describe("Vault's dialect: auth/{mount}/login and the KV v2 merge patch", function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let k8s: TestIssuer;
  before(async () => {
    k8s = await TestIssuer.start('RS256');
    c = await startTestCoffer();
    for (const name of ['kubernetes', 'payments-pods']) {
      const res = await c.call('PUT', `/v1/sys/login-roles/${name}`, {
        json: {
          issuer: k8s.url,
          jwks_url: k8s.jwksUrl,
          bound_audiences: ['coffer'],
          bound_claims: { 'kubernetes.io.serviceaccount.name': 'api' },
          scopes: [{ namespace: 'apps/*', read: true }],
          ttl: 600,
        },
      });
      expect(res.status, res.text).to.equal(201);
    }
    await c.call('PUT', '/v1/kv/apps/payments/db', {
      json: {
        value: JSON.stringify({ user: 'app', password: 'one', pool: { size: 5 } }),
        type: 'secret',
      },
    });
  });
  after(async () => {
    await c?.close();
    await k8s?.close();
  });

  const vault = (
    method: string,
    path: string,
    init: { token?: string; json?: unknown; type?: string },
  ) =>
    c.call(method, `/vault/v1/${path}`, {
      token: null,
      headers: {
        ...(init.token ? { 'x-vault-token': init.token } : {}),
        ...(init.type ? { 'content-type': init.type } : {}),
      },
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    });

  it("trades a workload's JWT for a token answered as Vault's auth block: the role named, or the mount's when none is", async () => {
    const jwt = await k8s.sign(k8s.kubernetesClaims('payments', 'api'));
    for (const [path, role] of [
      ['auth/kubernetes/login', 'payments-pods'],
      ['auth/kubernetes/login', ''],
    ] as const) {
      const res = await vault('POST', path, { json: { role, jwt } });
      expect(res.status, res.text).to.equal(200);
      const auth = res.body.auth;
      expect(auth).to.include({ renewable: true, token_type: 'service' });
      expect(auth.lease_duration).to.be.within(590, 600);
      expect(auth.client_token).to.be.a('string');
      // The token reads what the login role's scopes allow, through Vault's API too.
      const read = await vault('GET', 'secret/data/apps/payments/db', { token: auth.client_token });
      expect(read.status, read.text).to.equal(200);
      expect(read.body.data.data.password).to.equal('one');
    }
    const refused = await vault('POST', 'auth/kubernetes/login', {
      json: {
        role: 'payments-pods',
        jwt: await k8s.sign(k8s.kubernetesClaims('payments', 'other')),
      },
    });
    expect(refused.status).to.equal(401);
    expect(refused.body.errors).to.have.length(1);
    expect((await vault('POST', 'auth/kubernetes/nope', { json: { jwt } })).status).to.equal(404);
    const unknownField = await vault('POST', 'auth/kubernetes/login', { json: { jwt, extra: 1 } });
    expect(unknownField.status).to.equal(400);
  });

  it('merges fields into the latest version as a new version (null removes one), over the version the caller names when it names one', async () => {
    const patched = await vault('PATCH', 'secret/data/apps/payments/db', {
      token: c.rootToken,
      type: 'application/merge-patch+json',
      json: { data: { password: 'two', user: null, pool: { idle: 1 } } },
    });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.data.version).to.equal(2);
    const read = await vault('GET', 'secret/data/apps/payments/db', { token: c.rootToken });
    expect(read.body.data.data).to.deep.equal({ password: 'two', pool: { size: 5, idle: 1 } });
    const stale = await vault('PATCH', 'secret/data/apps/payments/db', {
      token: c.rootToken,
      type: 'application/merge-patch+json',
      json: { data: { password: 'three' }, options: { cas: 1 } },
    });
    expect(stale.status).to.equal(400);
    expect(stale.body.errors[0]).to.equal(
      'check-and-set parameter did not match the current version',
    );
    const missing = await vault('PATCH', 'secret/data/apps/payments/none', {
      token: c.rootToken,
      type: 'application/merge-patch+json',
      json: { data: { a: 1 } },
    });
    expect([missing.status, missing.body]).to.deep.equal([404, { errors: [] }]);
    // Coffer's own PATCH sets a key's metadata, never its value: Vault's merge patch is refused there.
    expect(
      (await c.call('PATCH', '/v1/kv/apps/payments/db', { json: { data: { a: 1 } } })).status,
    ).to.equal(400);
  });
});
