import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { command, runCoffer } from '../support/process.js';

describe('coffer audit verify --remote and coffer audit search (offline and --remote)', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let offline: Record<string, string>;
  let remote: Record<string, string>;

  before(async () => {
    c = await startTestCoffer();
    const reader = await c.token({ role: 'reader', metadata: { name: 'search-me' } });
    await c.put('audited/app/db_password', 'hunter2-audited');
    await c.put('audited/app/db_password', 'hunter2-audited-2');
    await c.call('GET', '/v1/kv/audited/app/db_password', { token: reader });
    await c.call('GET', '/v1/kv/audited/app/?values=true', { token: reader });
    await c.call('GET', '/v1/kv/audited/app/missing', { token: reader });
    offline = {
      COFFER_DATA_DIR: c.config.data_dir,
      COFFER_MASTER_KEY_FILE: c.config.master_key_file,
      COFFER_AUDIT_DIR: c.config.audit.dir!,
    };
    remote = { COFFER_ADDR: c.url, COFFER_TOKEN: await c.token({ role: 'auditor' }) };
  });
  after(async () => {
    await c.close();
  });

  it('verify --remote prints what the offline verify prints, with the same exit code', async () => {
    const local = await runCoffer(['audit', 'verify'], offline);
    const server = await command(['audit', 'verify', '--remote'], remote);
    expect(local.code, local.stderr).to.equal(0);
    expect(server.code, server.stderr).to.equal(0);
    // The same lines, but for the counts that the calls themselves moved on.
    const shape = (text: string) =>
      text.split('\n').map((l) =>
        l
          .replace(/\d+/g, 'N')
          .replace(/N{2,}/g, 'N')
          .replace(/ to \S+ \(/, ' to T ('),
      );
    expect(shape(server.stdout).map((l) => l.split(':')[0])).to.deep.equal(
      shape(local.stdout).map((l) => l.split(':')[0]),
    );
    expect(server.stdout).to.match(/^intact: \d+ entries/);
    expect(server.stdout).to.include('covers: ');
    // Both say what an intact verdict from this machine alone does not rule out.
    for (const out of [local.stdout, server.stdout])
      expect(out).to.include('an older copy verifies too; --against FILE');
  });

  it('search finds the same entries offline and through the server, by key (a namespace read included) and by token name', async () => {
    const args = ['audit', 'search', '--key', 'audited/app/db_password', '--json'];
    const local = await runCoffer(args, offline);
    const server = await command([...args, '--remote'], remote);
    expect(local.code, local.stderr).to.equal(0);
    expect(server.code, server.stderr).to.equal(0);
    const entries = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries(server.stdout)).to.deep.equal(entries(local.stdout));
    const found = entries(local.stdout);
    // Two writes, the single read, and the namespace's values read that returned it.
    expect(found.map((e) => e.action)).to.deep.equal(['write', 'write', 'read', 'read']);
    expect(found[3]).to.deep.include({ reads: [{ key: 'db_password', version: 2 }] });

    const byName = await command(
      ['audit', 'search', '--remote', '--token-name', 'search-me', '--outcome', '404'],
      remote,
    );
    expect(byName.stdout.trim().split('\n')).to.have.length(1);
    expect(byName.stdout).to.match(
      /read {2}audited\/app\/missing {2}404 not_found {2}search-me \(/,
    );
    expect(byName.stdout).not.to.include('hunter2');
  });

  it("prints a token name someone chose as text, never as the auditor's terminal controls (offline and --remote)", async () => {
    const hidden = await c.token({
      role: 'reader',
      metadata: { name: 'ok\u001b[1A\u001b[2K\u009b2Kgone' },
    });
    await c.call('GET', '/v1/kv/audited/app/hidden', { token: hidden });
    for (const [args, env] of [
      [['audit', 'search', '--key', 'audited/app/hidden'], offline],
      [['audit', 'search', '--remote', '--key', 'audited/app/hidden'], remote],
    ] as const) {
      const out = await runCoffer([...args], env);
      expect(out.code, out.stderr).to.equal(0);
      expect(out.stdout).to.include('ok\\u001b[1A\\u001b[2K\\u009b2Kgone (');
      expect(out.stdout.replace(/\n/g, '')).to.not.match(/\p{Cc}/u);
    }
  });

  it('refuses a malformed filter before reading anything, and a token that may not read the log', async () => {
    const bad = await command(['audit', 'search', '--remote', '--from', 'yesterday'], remote);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.include('--from');
    const reader = await c.token({ role: 'reader' });
    const denied = await command(['audit', 'search', '--remote'], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: reader,
    });
    expect(denied.code).to.equal(4);
    const noToken = await command(['audit', 'verify', '--remote'], { COFFER_ADDR: c.url });
    expect(noToken.code).to.equal(2);
  });
});
