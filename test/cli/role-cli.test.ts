import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { command } from '../support/process.js';

describe('coffer role: runtime roles and login roles from the command line', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  let dir: string;

  before(async () => {
    c = await startTestCoffer();
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken };
    dir = tempDir();
  });
  after(async () => {
    await c.close();
  });

  it('puts a role from --rule and --privilege, lists and shows it, and the server enforces it', async () => {
    const put = await command(
      [
        'role',
        'put',
        'payments-reader',
        '--rule',
        'payments/*:read,list:config,secret',
        '--privilege',
        'read_audit',
      ],
      env,
    );
    expect(put.code, put.stderr).to.equal(0);
    expect(put.stdout).to.equal('role payments-reader saved\n');
    const ls = await command(['role', 'ls'], env);
    expect(ls.stdout).to.match(
      /payments-reader\s+runtime\s+payments\/\*:read,list:config,secret\s+read_audit/,
    );
    expect(ls.stdout).to.match(/^admin\s+built-in/m);
    const shown = JSON.parse((await command(['role', 'show', 'payments-reader'], env)).stdout);
    expect(shown).to.include({ name: 'payments-reader', source: 'runtime' });
    expect(shown.rules).to.deep.equal([
      { namespaces: ['payments/*'], actions: ['read', 'list'], types: ['config', 'secret'] },
    ]);
    await c.put('payments/prod/db_password', 'pw');
    const token = (await c.call('POST', '/v1/auth/token', { json: { role: 'payments-reader' } }))
      .body.token as string;
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password', { token })).status).to.equal(
      200,
    );
  });

  it('puts a role from a JSON file, refuses bad rules with the server’s field, and a built-in role', async () => {
    const file = join(dir, 'ops.json');
    writeFileSync(
      file,
      JSON.stringify({ rules: [{ namespaces: ['*'], actions: ['list'], types: ['config'] }] }),
    );
    expect((await command(['role', 'put', 'ops', '--file', file], env)).code).to.equal(0);
    const bad = await command(['role', 'put', 'ops', '--rule', 'x:fly:config'], env);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.include('400');
    const builtIn = await command(['role', 'put', 'admin', '--rule', '*:read:config'], env);
    expect(builtIn.code).to.equal(1);
    expect(builtIn.stderr).to.include('is built in and cannot be redefined');
    const usage = await command(['role', 'put', 'ops', '--rule', 'no-colons'], env);
    expect(usage.code).to.equal(2);
  });

  it('refuses to delete a role live tokens hold unless --force, and then those tokens are refused', async () => {
    const token = (await c.call('POST', '/v1/auth/token', { json: { role: 'ops' } })).body
      .token as string;
    const refused = await command(['role', 'rm', 'ops'], env);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/409.*1 live token/);
    const forced = await command(['role', 'rm', 'ops', '--force'], env);
    expect([forced.code, forced.stdout]).to.deep.equal([
      0,
      'role ops removed; the tokens that held it are refused from now\n',
    ]);
    expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);
    expect((await command(['role', 'show', 'ops'], env)).code).to.equal(3);
  });

  it('puts, lists, shows and removes a login role', async () => {
    const file = join(dir, 'ci.json');
    writeFileSync(
      file,
      JSON.stringify({
        issuer: 'https://token.actions.githubusercontent.com',
        discovery: true,
        bound_audiences: ['coffer'],
        bound_claims: { repository: 'acme/payments' },
        role: 'config-reader',
        ttl: 300,
      }),
    );
    const put = await command(['role', 'login', 'put', 'deploy', '--file', file], env);
    expect(put.code, put.stderr).to.equal(0);
    const ls = await command(['role', 'login', 'ls'], env);
    expect(ls.stdout).to.match(
      /deploy\s+https:\/\/token\.actions\.githubusercontent\.com\s+role config-reader\s+300s/,
    );
    const shown = JSON.parse((await command(['role', 'login', 'show', 'deploy'], env)).stdout);
    expect(shown.bound_claims).to.deep.equal({ repository: 'acme/payments' });
    const removed = await command(['role', 'login', 'rm', 'deploy'], env);
    expect([removed.code, removed.stdout]).to.deep.equal([0, 'login role deploy removed\n']);
    expect((await command(['role', 'login', 'show', 'deploy'], env)).code).to.equal(3);
  });

  it('is refused for a token without manage_roles (exit 4)', async () => {
    const reader = (await c.call('POST', '/v1/auth/token', { json: { role: 'reader' } })).body
      .token as string;
    const denied = await command(['role', 'ls'], { COFFER_ADDR: c.url, COFFER_TOKEN: reader });
    expect(denied.code).to.equal(4);
  });
});
