import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { type ApiResponse, startTestCoffer, type TestCoffer } from '../support/harness.js';
import { putPeopleLoginRole, TestOidcProvider } from '../support/oidc-provider.js';

const random = () => randomBytes(32).toString('base64url');

/** What `coffer login --oidc` draws and keeps: the PKCE verifier, the state and the nonce. */
function drawChecks(redirectUri = 'http://127.0.0.1:49152/callback') {
  const verifier = random();
  return {
    verifier,
    challenge: createHash('sha256').update(verifier).digest('base64url'),
    state: random(),
    nonce: random(),
    redirectUri,
  };
}

type Checks = ReturnType<typeof drawChecks>;

async function entryOf(c: TestCoffer, res: ApiResponse): Promise<Record<string, unknown>> {
  const id = res.headers.get('x-request-id')!;
  const page = await c.call('GET', `/v1/sys/audit?request_id=${id}`);
  const entry = page.body.entries.find((e: { kind: string }) => e.kind === 'request');
  expect(entry, `an entry for request ${id}`).to.not.equal(undefined);
  return entry;
}

describe('OIDC sign-in for people (POST /v1/auth/login/oidc/start, /callback)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let idp: TestOidcProvider;

  const start = (role: string, checks: Checks) =>
    c.call('POST', '/v1/auth/login/oidc/start', {
      token: null,
      json: {
        role,
        redirect_uri: checks.redirectUri,
        code_challenge: checks.challenge,
        state: checks.state,
        nonce: checks.nonce,
      },
    });

  /** What came back to the redirect address, sent on with the checks (`change` alters what is sent). */
  const callback = (
    role: string,
    checks: Checks,
    callbackUrl: string,
    change: Record<string, unknown> = {},
  ) => {
    const query = new URL(callbackUrl).searchParams;
    return c.call('POST', '/v1/auth/login/oidc/callback', {
      token: null,
      json: {
        role,
        redirect_uri: checks.redirectUri,
        code: query.get('code'),
        state: query.get('state'),
        iss: query.get('iss') ?? undefined,
        code_verifier: checks.verifier,
        nonce: checks.nonce,
        ...change,
      },
    });
  };

  /** A whole sign-in as `sub`, up to the provider's redirect; the callback left to the test. */
  async function signedIn(role: string, sub: string): Promise<{ checks: Checks; url: string }> {
    const checks = drawChecks();
    const started = await start(role, checks);
    expect(started.status, started.text).to.equal(200);
    const back = await idp.signIn(started.body.auth_url, sub, { follow: false });
    return { checks, url: back.callbackUrl };
  }

  before(async () => {
    idp = await TestOidcProvider.start();
    idp.addAccount('alice', { groups: ['payments-team'] });
    idp.addAccount('bob', { groups: ['payments-team', 'coffer-admins'] });
    idp.addAccount('carol', { groups: ['marketing'] });
    c = await startTestCoffer();
    await putPeopleLoginRole(c, idp, 'people', { claims_to_metadata: { email: 'email' } });
    await c.put('payments/prod/db_password', 's3cret');
  });

  after(async () => {
    await c?.close();
    await idp?.close();
  });

  it('never shows the client secret, and keeps it when what GET shows is put back', async () => {
    const got = await c.call('GET', '/v1/sys/login-roles/people');
    expect(got.status).to.equal(200);
    expect(got.text).to.not.include(idp.clientSecret);
    expect(got.body.oidc).to.deep.equal({
      client_id: idp.clientId,
      client_secret_set: true,
      scopes: ['openid', 'email', 'groups'],
    });
    const { id: _id, updated_at: _at, ...shown } = got.body;
    const { client_secret_set: _set, ...oidc } = shown.oidc;
    const back = await c.call('PUT', '/v1/sys/login-roles/people', { json: { ...shown, oidc } });
    expect(back.status, back.text).to.equal(200);
    expect((await c.call('GET', '/v1/sys/login-roles')).text).to.not.include(idp.clientSecret);
    // Still a confidential client: the sign-in below trades its code with the kept secret.
    const { checks, url } = await signedIn('people', 'alice');
    expect((await callback('people', checks, url)).status).to.equal(201);
  });

  it("answers the provider's address with the PKCE challenge, state and nonce, keeping nothing", async () => {
    const checks = drawChecks('http://localhost:61000/oidc/callback');
    const res = await start('people', checks);
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const url = new URL(res.body.auth_url);
    expect(url.origin).to.equal(idp.url);
    expect(Object.fromEntries(url.searchParams)).to.include({
      client_id: idp.clientId,
      response_type: 'code',
      redirect_uri: checks.redirectUri,
      code_challenge: checks.challenge,
      code_challenge_method: 'S256',
      state: checks.state,
      nonce: checks.nonce,
      scope: 'openid email groups',
    });
  });

  it('refuses a redirect address that is not loopback or listed, before anything else', async () => {
    for (const uri of [
      'https://evil.example/callback',
      'http://10.0.0.1:8000/callback',
      'http://127.0.0.1:8000/callback?next=https://evil.example',
    ]) {
      const res = await start('people', drawChecks(uri));
      expect(res.status, uri).to.equal(400);
      expect(res.body.errors[0].field).to.equal('/redirect_uri');
    }
  });

  it('signs a person in: groups to role, audited with login role, issuer and subject, never the code', async () => {
    const { checks, url } = await signedIn('people', 'alice');
    const res = await callback('people', checks, url);
    expect(res.status, res.text).to.equal(201);
    expect(res.body.role).to.equal('payments-reader');
    expect(res.body.metadata).to.include({ email: 'alice@example.test' });
    expect(res.body.login).to.deep.include({ role: 'people', issuer: idp.url, subject: 'alice' });
    const read = await c.call('GET', '/v1/kv/payments/prod/db_password', { token: res.body.token });
    expect(read.status).to.equal(200);
    const write = await c.call('PUT', '/v1/kv/payments/prod/other', {
      token: res.body.token,
      json: { value: 'x', type: 'config' },
    });
    expect(write.status).to.equal(403);
    const entry = await entryOf(c, res);
    expect(entry).to.include({
      action: 'login.oidc',
      login_role: 'people',
      issuer: idp.url,
      subject: 'alice',
      subject_token_id: res.body.id,
    });
    const code = new URL(url).searchParams.get('code')!;
    const dir = c.config.audit.dir!;
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'latin1');
      expect(text).to.not.include(code);
      expect(text).to.not.include(checks.verifier);
      expect(text).to.not.include(res.body.token);
    }
  });

  it('refuses a code used twice, another verifier and another nonce, each with its reason', async () => {
    const first = await signedIn('people', 'alice');
    expect((await callback('people', first.checks, first.url)).status).to.equal(201);
    const again = await callback('people', first.checks, first.url);
    expect(again.status).to.equal(401);
    expect(await entryOf(c, again)).to.include({ reason: 'code_refused' });

    const second = await signedIn('people', 'alice');
    const otherVerifier = await callback('people', second.checks, second.url, {
      code_verifier: random(),
    });
    expect(otherVerifier.status).to.equal(401);
    expect(await entryOf(c, otherVerifier)).to.include({ reason: 'code_refused' });

    const third = await signedIn('people', 'alice');
    const otherNonce = await callback('people', third.checks, third.url, { nonce: random() });
    expect(otherNonce.status).to.equal(401);
    expect(await entryOf(c, otherNonce)).to.include({ reason: 'id_token_invalid' });
  });

  it('asks a person whose groups give several roles to choose one, and gives the one chosen', async () => {
    const unchosen = await signedIn('people', 'bob');
    const res = await callback('people', unchosen.checks, unchosen.url);
    expect(res.status, res.text).to.equal(400);
    expect(res.body.errors[0]).to.include({ field: '/token_role' });
    expect(res.body.errors[0].message).to.include('payments-reader').and.include('admin');
    expect(await entryOf(c, res)).to.include({ reason: 'role_choice_needed' });

    const chosen = await signedIn('people', 'bob');
    const admin = await callback('people', chosen.checks, chosen.url, { token_role: 'admin' });
    expect(admin.status, admin.text).to.equal(201);
    expect(admin.body.role).to.equal('admin');

    const notHeld = await signedIn('people', 'alice');
    const refused = await callback('people', notHeld.checks, notHeld.url, { token_role: 'admin' });
    expect(refused.status).to.equal(400);
    expect(await entryOf(c, refused)).to.include({ reason: 'role_not_granted' });
  });

  it('refuses to delete a role a login role’s group_roles names, unless forced', async () => {
    const res = await c.call('DELETE', '/v1/sys/roles/payments-reader');
    expect(res.status, res.text).to.equal(409);
    expect(res.body.detail).to.include('"people"');
  });

  it('refuses a person whose groups give no role when the login role gives none beside them', async () => {
    const { checks, url } = await signedIn('people', 'carol');
    const res = await callback('people', checks, url);
    expect(res.status).to.equal(401);
    expect(await entryOf(c, res)).to.include({ reason: 'no_group_role', subject: 'carol' });
  });

  it('refuses a sign-in through a login role without oidc, and a wrong client secret', async () => {
    const plain = await c.call('PUT', '/v1/sys/login-roles/workloads', {
      json: {
        issuer: idp.url,
        discovery: true,
        bound_audiences: ['coffer'],
        role: 'config-reader',
      },
    });
    expect(plain.status, plain.text).to.equal(201);
    const res = await start('workloads', drawChecks());
    expect(res.status).to.equal(401);
    expect(await entryOf(c, res)).to.include({ reason: 'oidc_not_enabled' });

    const wrong = await c.call('PUT', '/v1/sys/login-roles/wrong-secret', {
      json: {
        issuer: idp.url,
        discovery: true,
        bound_audiences: [idp.clientId],
        role: 'config-reader',
        oidc: { client_id: idp.clientId, client_secret: 'not-the-secret' },
      },
    });
    expect(wrong.status, wrong.text).to.equal(201);
    const { checks, url } = await signedIn('wrong-secret', 'alice');
    const traded = await callback('wrong-secret', checks, url);
    expect(traded.status).to.equal(401);
    expect(await entryOf(c, traded)).to.include({ reason: 'client_refused' });
  });

  it('refuses an oidc block without discovery or with a client the audiences do not name', async () => {
    const res = await c.call('PUT', '/v1/sys/login-roles/bad', {
      json: {
        issuer: idp.url,
        jwks_url: `${idp.url}/jwks`,
        bound_audiences: ['coffer'],
        role: 'config-reader',
        oidc: { client_id: idp.clientId, redirect_uris: ['https://x.example/cb#frag'] },
      },
    });
    expect(res.status).to.equal(400);
    const fields = res.body.errors.map((e: { field: string }) => e.field);
    expect(fields).to.include.members(['/oidc', '/bound_audiences', '/oidc/redirect_uris/0']);
  });
});
