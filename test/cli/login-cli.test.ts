import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { putPeopleLoginRole, TestOidcProvider } from '../support/oidc-provider.js';
import { command, type RunningCommand, startCommand } from '../support/process.js';

describe('coffer login --oidc and coffer logout', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let idp: TestOidcProvider;

  before(async () => {
    idp = await TestOidcProvider.start();
    idp.addAccount('alice', { groups: ['payments-team'] });
    idp.addAccount('bob', { groups: ['payments-team', 'coffer-admins'] });
    c = await startTestCoffer();
    await putPeopleLoginRole(c, idp, 'oidc');
    await c.put('payments/prod/db_password', 's3cret');
  });

  after(async () => {
    await c?.close();
    await idp?.close();
  });

  /** The address `coffer login` prints for the browser, once it has. */
  async function authUrlOf(login: RunningCommand): Promise<string> {
    let url: string | undefined;
    await eventually(
      () => {
        url = /^ {2}(http\S+)$/m.exec(login.stderr())?.[1];
        return url !== undefined;
      },
      { what: 'the address for the browser' },
    );
    return url!;
  }

  /** `coffer login --oidc` run to its end, the person signing in as `sub` in the "browser". */
  async function signIn(config: string, sub: string, args: string[] = []) {
    const login = startCommand(['login', '--oidc', '--no-browser', ...args], {
      COFFER_ADDR: c.url,
      XDG_CONFIG_HOME: config,
    });
    const browser = await idp.signIn(await authUrlOf(login), sub);
    return { browser, done: await login.done };
  }

  it('signs a person in through the browser, stores the token owner-only, and later commands use it', async () => {
    const config = tempDir('coffer-login-');
    const { browser, done } = await signIn(config, 'alice');
    expect(done.code, done.stderr).to.equal(0);
    expect(browser.status).to.equal(200);
    expect(browser.text).to.include('Signed in to Coffer');
    expect(done.stderr).to.include('Signed in as alice with role payments-reader');
    const file = join(config, 'coffer', 'login.json');
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(statSync(join(config, 'coffer')).mode & 0o777).to.equal(0o700);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored).to.include({ addr: c.url, login_role: 'oidc', subject: 'alice' });
    // The token is in the file only: never printed.
    expect(done.stderr + done.stdout).to.not.include(stored.token);

    const env = { COFFER_ADDR: c.url, XDG_CONFIG_HOME: config };
    const who = await command(['whoami', '--json'], env);
    expect(who.code, who.stderr).to.equal(0);
    expect(JSON.parse(who.stdout)).to.include({ id: stored.token_id, role: 'payments-reader' });
    const read = await command(['kv', 'get', 'payments/prod/db_password'], env);
    expect([read.code, read.stdout]).to.deep.equal([0, 's3cret']);
    // Without COFFER_ADDR, the stored server is the one.
    const bare = await command(['whoami', '--json'], { XDG_CONFIG_HOME: config });
    expect(bare.code, bare.stderr).to.equal(0);
  });

  it('never sends the stored token to another server, and refuses a file others may read', async () => {
    const config = tempDir('coffer-login-');
    expect((await signIn(config, 'alice')).done.code).to.equal(0);
    const seen: (string | undefined)[] = [];
    const other = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(401).end();
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const elsewhere = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      const res = await command(['whoami'], { COFFER_ADDR: elsewhere, XDG_CONFIG_HOME: config });
      expect(res.code).to.equal(2);
      expect(res.stderr).to.include('no token');
      expect(seen).to.deep.equal([]);
    } finally {
      other.close();
    }
    chmodSync(join(config, 'coffer', 'login.json'), 0o644);
    const open = await command(['whoami'], { COFFER_ADDR: c.url, XDG_CONFIG_HOME: config });
    expect(open.code).to.equal(2);
    expect(open.stderr).to.include('may be read by others');
  });

  it('waits past a redirect whose state is not its own', async () => {
    const config = tempDir('coffer-login-');
    const login = startCommand(['login', '--oidc', '--no-browser'], {
      COFFER_ADDR: c.url,
      XDG_CONFIG_HOME: config,
    });
    const authUrl = await authUrlOf(login);
    const callback = new URL(authUrl).searchParams.get('redirect_uri')!;
    const forged = await fetch(`${callback}?code=stolen&state=guessed`);
    expect(forged.status).to.equal(400);
    const browser = await idp.signIn(authUrl, 'alice');
    expect(browser.status).to.equal(200);
    expect((await login.done).code).to.equal(0);
  });

  it('asks a person whose groups give several roles to choose, and takes --role', async () => {
    const config = tempDir('coffer-login-');
    const unchosen = await signIn(config, 'bob');
    expect(unchosen.done.code).to.equal(2);
    expect(unchosen.done.stderr).to.match(/one of: payments-reader, admin.*--role NAME/);
    expect(unchosen.browser.text).to.include('Sign-in failed');
    expect(existsSync(join(config, 'coffer', 'login.json'))).to.equal(false);
    const chosen = await signIn(config, 'bob', ['--role', 'admin']);
    expect(chosen.done.code, chosen.done.stderr).to.equal(0);
    expect(chosen.done.stderr).to.include('with role admin');
  });

  it('lists a login role for people with what its groups give, never its client secret', async () => {
    const res = await command(['role', 'login', 'ls'], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: c.rootToken,
    });
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.include(
      'groups payments-team→payments-reader,coffer-admins→admin (people: oidc)',
    );
    const shown = await command(['role', 'login', 'show', 'oidc'], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: c.rootToken,
    });
    expect(JSON.parse(shown.stdout).oidc).to.include({ client_secret_set: true });
    expect(shown.stdout).to.not.include(idp.clientSecret);
  });

  it('says so when the login role is not one for people', async () => {
    const res = await command(['login', '--oidc', '--no-browser', '--login-role', 'nobody'], {
      COFFER_ADDR: c.url,
      XDG_CONFIG_HOME: tempDir('coffer-login-'),
    });
    expect(res.code).to.equal(4);
    expect(res.stderr).to.include('login role "nobody" was refused');
  });

  it('logs out: the token is revoked at the server and the file removed', async () => {
    const config = tempDir('coffer-login-');
    expect((await signIn(config, 'alice')).done.code).to.equal(0);
    const { token } = JSON.parse(readFileSync(join(config, 'coffer', 'login.json'), 'utf8'));
    const env = { COFFER_ADDR: c.url, XDG_CONFIG_HOME: config };
    const out = await command(['logout'], env);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stderr).to.include('Signed out');
    expect(existsSync(join(config, 'coffer', 'login.json'))).to.equal(false);
    expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);
    const again = await command(['logout'], env);
    expect([again.code, again.stderr]).to.deep.equal([0, 'Not signed in: nothing to do.\n']);
    const who = await command(['whoami'], env);
    expect(who.code).to.equal(2);
  });

  it('tells a person whose stored sign-in was revoked to sign in again', async () => {
    const config = tempDir('coffer-login-');
    expect((await signIn(config, 'alice')).done.code).to.equal(0);
    const { token_id: id } = JSON.parse(readFileSync(join(config, 'coffer', 'login.json'), 'utf8'));
    expect((await c.call('DELETE', `/v1/auth/token/${id}`)).status).to.equal(204);
    const who = await command(['whoami'], { COFFER_ADDR: c.url, XDG_CONFIG_HOME: config });
    expect(who.code).to.equal(4);
    expect(who.stderr).to.include('sign in again (coffer login --oidc)');
  });
});
