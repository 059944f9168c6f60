import { expect } from 'chai';
import { type ApiResponse, startTestCoffer, type TestCoffer } from '../support/harness.js';
import { putPeopleLoginRole, TestOidcProvider } from '../support/oidc-provider.js';
import { twoServersOnPostgres } from '../support/shared-servers.js';

/** The session cookie a sign-in set, as the browser would send it back. */
function cookieOf(res: ApiResponse): string {
  const set = res.headers.getSetCookie();
  expect(set, 'a Set-Cookie header').to.have.length(1);
  return set[0]!.split(';')[0]!;
}

async function signIn(c: TestCoffer, token: string) {
  const res = await c.call('POST', '/v1/console/sign-in', { token: null, json: { token } });
  expect(res.status, res.text).to.equal(201);
  return { res, cookie: cookieOf(res), csrf: res.body.csrf as string };
}

/** A call with the session cookie only (no Authorization), and the CSRF header when given. */
const asConsole = (
  c: TestCoffer,
  method: string,
  path: string,
  session: { cookie: string; csrf?: string },
  json?: unknown,
) =>
  c.call(method, path, {
    token: null,
    headers: {
      cookie: session.cookie,
      ...(session.csrf === undefined ? {} : { 'x-coffer-csrf': session.csrf }),
    },
    ...(json === undefined ? {} : { json }),
  });

describe('web console sessions (/v1/console/sign-in, /v1/console/session)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let offset = 0;
  let writer: string;

  before(async () => {
    c = await startTestCoffer({
      start: { now: () => Date.now() + offset },
      env: { COFFER_CONSOLE_IDLE_TIMEOUT: '600', COFFER_CONSOLE_MAX_LIFETIME: '3600' },
    });
    writer = await c.token({ role: 'writer', expires_in: 86_400 });
    await c.put('team/app/db_password', 's3cret');
  });

  after(async () => {
    await c?.close();
  });

  it('trades a token for an HttpOnly, SameSite=Strict cookie that holds a session id, never the token', async () => {
    const { res, cookie, csrf } = await signIn(c, writer);
    const set = res.headers.getSetCookie()[0]!;
    expect(set).to.match(/^coffer_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(set).to.not.include(writer.split('_').at(-1)!);
    expect(res.text).to.not.include(writer);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.body).to.include({ role: 'writer', is_root: false, via: 'token' });
    expect(res.body.csrf).to.match(/^[A-Za-z0-9_-]{43}$/);
    const me = await asConsole(c, 'GET', '/v1/auth/me', { cookie, csrf });
    expect(me.status).to.equal(200);
    expect(me.body.id).to.equal(res.body.token_id);
    const again = await asConsole(c, 'GET', '/v1/console/session', { cookie, csrf });
    expect(again.body.csrf).to.equal(res.body.csrf);
  });

  it("acts as nobody with a session cookie that comes without the page's key for it (a cookie another page planted): reads too", async () => {
    const planted = await signIn(c, writer);
    const victimPage = await signIn(c, await c.token({ role: 'reader', expires_in: 3600 }));
    // The planter's cookie, sent with no key, or with the key of the page it was planted under.
    for (const csrf of [undefined, victimPage.csrf]) {
      const me = await asConsole(c, 'GET', '/v1/auth/me', { cookie: planted.cookie, csrf });
      expect(me.status, String(csrf)).to.equal(401);
      expect(me.body.detail).to.include("without this page's key");
      const session = await asConsole(c, 'GET', '/v1/console/session', {
        cookie: planted.cookie,
        csrf,
      });
      expect(session.body).to.deep.equal({ signed_in: false });
      // The planted cookie is cleared from the browser that sent it.
      expect(session.headers.getSetCookie()[0]).to.match(
        /^coffer_session=; .*Expires=Thu, 01 Jan 1970/,
      );
    }
    // Its own page, with its key, goes on.
    expect((await asConsole(c, 'GET', '/v1/auth/me', planted)).status).to.equal(200);
  });

  it('refuses a request carrying two session cookies (one tossed in by another page of the host): never acts as either', async () => {
    const mine = await signIn(c, writer);
    const other = await signIn(c, await c.token({ role: 'reader', expires_in: 3600 }));
    const [name, myId] = mine.cookie.split('=') as [string, string];
    const otherId = other.cookie.split('=')[1]!;
    for (const cookie of [
      `${name}=${otherId}; ${name}=${myId}`,
      `${name}=${myId}; a=b; ${name}=${otherId}`,
    ]) {
      const res = await asConsole(c, 'GET', '/v1/auth/me', { cookie });
      expect(res.status, cookie).to.equal(401);
      expect(res.body.detail).to.include(`2 ${name} cookies`);
      const session = await asConsole(c, 'GET', '/v1/console/session', { cookie });
      expect(session.status).to.equal(200);
      expect(session.body.signed_in).to.equal(false);
    }
    expect((await asConsole(c, 'GET', '/v1/auth/me', mine)).status).to.equal(200);
  });

  it('audits the session’s requests as its token, marked as the console’s', async () => {
    const { cookie, csrf } = await signIn(c, writer);
    const read = await asConsole(c, 'GET', '/v1/kv/team/app/db_password', { cookie, csrf });
    expect(read.status).to.equal(200);
    const page = await c.call(
      'GET',
      `/v1/sys/audit?request_id=${read.headers.get('x-request-id')}`,
    );
    const entry = page.body.entries.find((e: { kind: string }) => e.kind === 'request');
    const me = await asConsole(c, 'GET', '/v1/auth/me', { cookie, csrf });
    expect(entry).to.include({ via: 'console', action: 'read', token_id: me.body.id });
    expect(entry).to.include({ namespace: 'team/app', key: 'db_password' });
  });

  it('refuses a call that changes something without the session’s CSRF header, as a cross-site form would send it', async () => {
    const { cookie, csrf } = await signIn(c, writer);
    const body = { value: 'v2', type: 'secret' };
    const none = await asConsole(c, 'PUT', '/v1/kv/team/app/db_password', { cookie }, body);
    expect(none.status).to.equal(401);
    expect(none.body.detail).to.include('X-Coffer-CSRF');
    const wrong = await asConsole(
      c,
      'PUT',
      '/v1/kv/team/app/db_password',
      { cookie, csrf: 'A'.repeat(43) },
      body,
    );
    expect(wrong.status).to.equal(401);
    // A form post from another site: no header can be set, the body is not JSON.
    const form = await c.call('POST', '/v1/auth/token', {
      token: null,
      headers: {
        cookie,
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'https://evil.example',
      },
      body: 'role=admin',
    });
    expect(form.status).to.equal(401);
    expect((await c.call('GET', '/v1/kv/team/app/db_password')).body.version).to.equal(1);
    const right = await asConsole(c, 'PUT', '/v1/kv/team/app/db_password', { cookie, csrf }, body);
    expect(right.status, right.text).to.equal(200);
  });

  it('refuses a wrong token at sign-in, and a cookie that names no session', async () => {
    const bad = await c.call('POST', '/v1/console/sign-in', {
      token: null,
      json: { token: `${writer.slice(0, -4)}AAAA` },
    });
    expect(bad.status).to.equal(401);
    expect(bad.headers.getSetCookie()).to.deep.equal([]);
    const made = await asConsole(c, 'GET', '/v1/auth/me', {
      cookie: `coffer_session=${'B'.repeat(43)}`,
    });
    expect(made.status).to.equal(401);
  });

  it('ends at sign-out: the cookie is cleared and refused from then on', async () => {
    const session = await signIn(c, writer);
    const out = await asConsole(c, 'POST', '/v1/console/sign-out', session);
    expect(out.status).to.equal(204);
    expect(out.headers.getSetCookie()[0]).to.match(/^coffer_session=; .*Expires=Thu, 01 Jan 1970/);
    const after = await asConsole(c, 'GET', '/v1/auth/me', session);
    expect(after.status).to.equal(401);
    expect(after.body.detail).to.include('console session has ended');
  });

  it('ends after the idle timeout and at its absolute lifetime, however much it is used', async () => {
    const idle = await signIn(c, writer);
    offset += 599_000;
    expect((await asConsole(c, 'GET', '/v1/auth/me', idle)).status).to.equal(200);
    offset += 599_000; // used 599 s ago: still within the idle timeout
    expect((await asConsole(c, 'GET', '/v1/auth/me', idle)).status).to.equal(200);
    offset += 601_000;
    expect((await asConsole(c, 'GET', '/v1/auth/me', idle)).status).to.equal(401);

    const busy = await signIn(c, writer);
    for (let i = 0; i < 6; i++) {
      offset += 590_000;
      const res = await asConsole(c, 'GET', '/v1/auth/me', busy);
      // 6 × 590 s = 3540 s < 3600 s: each use within the idle timeout, all within the lifetime.
      expect(res.status, `use ${i}`).to.equal(200);
    }
    offset += 100_000;
    expect((await asConsole(c, 'GET', '/v1/auth/me', busy)).status).to.equal(401);
  });

  it('ends when its token is revoked; a session of the root token acts as root', async () => {
    const token = await c.token({ role: 'reader' });
    const session = await signIn(c, token);
    expect((await asConsole(c, 'GET', '/v1/auth/me', session)).status).to.equal(200);
    const id = session.res.body.token_id;
    expect((await c.call('DELETE', `/v1/auth/token/${id}`)).status).to.equal(204);
    expect((await asConsole(c, 'GET', '/v1/auth/me', session)).status).to.equal(401);

    const root = await signIn(c, c.rootToken);
    expect(root.res.body).to.include({ is_root: true, role: 'root', token_id: 'root' });
    const created = await asConsole(c, 'POST', '/v1/auth/token', root, { role: 'reader' });
    expect(created.status, created.text).to.equal(201);
  });

  it('tells a page whether it has a live session, always with 200 (a signed-out page logs no error)', async () => {
    const none = await c.call('GET', '/v1/console/session', { token: null });
    expect([none.status, none.body]).to.deep.equal([200, { signed_in: false }]);
    const session = await signIn(c, writer);
    const live = await asConsole(c, 'GET', '/v1/console/session', session);
    expect(live.body).to.include({ signed_in: true, csrf: session.csrf });
    expect((await asConsole(c, 'POST', '/v1/console/sign-out', session)).status).to.equal(204);
    const ended = await asConsole(c, 'GET', '/v1/console/session', session);
    expect([ended.status, ended.body]).to.deep.equal([200, { signed_in: false }]);
    expect(ended.headers.getSetCookie()[0]).to.match(/^coffer_session=; /);
    // A bearer token is no session: the sign-out is for a session.
    expect((await c.call('POST', '/v1/console/sign-out')).status).to.equal(400);
  });

  it('is not kept from its idle timeout by a page asking whether it lives', async () => {
    const session = await signIn(c, writer);
    offset += 590_000;
    const asked = await asConsole(c, 'GET', '/v1/console/session', session);
    expect(asked.body).to.include({ signed_in: true });
    offset += 20_000; // 610 s after its last use, 20 s after the page asked
    expect((await asConsole(c, 'GET', '/v1/auth/me', session)).status).to.equal(401);
  });
});

describe('web console sessions on two servers sharing PostgreSQL', function () {
  this.timeout(60_000);
  const servers = twoServersOnPostgres();

  it('a session made on one server works on the other, and a sign-out on one ends it on both', async () => {
    const [a, b] = [servers.a(), servers.b()];
    const token = await a.token({ role: 'reader' });
    const session = await signIn(a, token);
    expect((await asConsole(b, 'GET', '/v1/auth/me', session)).status).to.equal(200);
    expect((await asConsole(b, 'POST', '/v1/console/sign-out', session)).status).to.equal(204);
    expect((await asConsole(a, 'GET', '/v1/auth/me', session)).status).to.equal(401);
    expect((await asConsole(b, 'GET', '/v1/auth/me', session)).status).to.equal(401);
  });
});

describe('the console behind a reverse proxy that ends TLS (COFFER_PUBLIC_URL)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let idp: TestOidcProvider;
  const PUBLIC = 'https://coffer.example.test';

  before(async () => {
    idp = await TestOidcProvider.start();
    // Plain HTTP here, as behind a proxy that ends TLS; people reach it at PUBLIC.
    c = await startTestCoffer({ env: { COFFER_PUBLIC_URL: `${PUBLIC}/` } });
    await putPeopleLoginRole(c, idp, 'people', {
      oidc: {
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        scopes: ['openid', 'groups'],
        redirect_uris: [`${PUBLIC}/v1/console/oidc/callback`],
      },
    });
  });

  after(async () => {
    await c?.close();
    await idp?.close();
  });

  it('sets Secure, __Host- cookies though the request came over plain HTTP', async () => {
    const res = await c.call('POST', '/v1/console/sign-in', {
      token: null,
      json: { token: c.rootToken },
    });
    expect(res.status).to.equal(201);
    expect(res.headers.getSetCookie()[0]).to.match(
      /^__Host-coffer_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict$/,
    );
  });

  it("sends the provider back to the public address, whatever the request's Host says", async () => {
    const res = await c.call('GET', `/v1/console/oidc/start?role=people&key=${'K'.repeat(43)}`, {
      token: null,
      headers: { host: 'attacker.example' },
    });
    expect(res.status, res.text).to.equal(303);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).to.equal(idp.url);
    expect(to.searchParams.get('redirect_uri')).to.equal(`${PUBLIC}/v1/console/oidc/callback`);
    expect(res.headers.getSetCookie()[0]).to.match(/^__Secure-coffer_oidc=.*; Secure/);
  });

  it("starts no sign-in without the page's key for the session it would open", async () => {
    const res = await c.call('GET', '/v1/console/oidc/start?role=people', { token: null });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal('/ui/#/sign-in-failed/no_session_key');
  });
});
