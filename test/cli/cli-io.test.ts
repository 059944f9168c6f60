import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { MAIN, runCoffer, runToExit, serveSettings } from '../support/process.js';
import { seedStore } from '../support/seed.js';

/** Runs `coffer args… | head -c 200` in a shell; resolves with coffer's own exit code and its stderr. */
function pipedIntoHead(args: string[], env: Record<string, string>) {
  const errFile = join(tempDir(), 'stderr');
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('COFFER_')),
  );
  const line = `"${process.execPath}" "${MAIN}" ${args.join(' ')} 2>"${errFile}" | head -c 200; echo "exit:\${PIPESTATUS[0]}"`;
  return new Promise<{ code: number; stderr: string; shown: string }>((resolve) => {
    const child = spawn('bash', ['-c', line], { env: { ...clean, ...env } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', () =>
      resolve({
        code: Number(/exit:(\d+)/.exec(out)?.[1]),
        stderr: readFileSync(errFile, 'utf8'),
        shown: out,
      }),
    );
  });
}

describe('the coffer command, as a person at a shell uses it', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  before(async () => {
    c = await startTestCoffer();
    // Enough namespaces that the seal report is much larger than a pipe's buffer.
    await seedStore(c.storage, c.app.keyring.current(), 3000, 3000);
    env = {
      COFFER_DATA_DIR: c.config.data_dir,
      COFFER_MASTER_KEY_FILE: c.config.master_key_file,
      COFFER_LOG_LEVEL: 'silent',
    };
  });
  after(async () => {
    await c.close();
  });

  it('stops quietly, with its own exit code, when the reader closes the pipe', async () => {
    const run = await pipedIntoHead(['audit', 'seal-report'], env);
    expect(run.shown.length).to.be.at.least(200);
    expect(run.stderr).to.equal('');
    expect(run.code).to.equal(0);
  });

  it('says it is reading a value typed at a terminal (it waits for Ctrl-D), and keeps quiet when one is piped in', async function () {
    // util-linux's script gives the command a terminal (Debian's bsdutils, an essential package).
    if (!existsSync('/usr/bin/script')) {
      const reason = 'no /usr/bin/script (util-linux) to give the command a terminal';
      if (process.env.COFFER_TEST_REQUIRE_SYSTEM_PACKAGES === '1') throw new Error(reason);
      if (this.test) this.test.title += ` [pending: ${reason}]`;
      this.skip();
    }
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('COFFER_')),
    );
    const child = spawn(
      'script',
      ['-qec', `"${process.execPath}" "${MAIN}" kv put tty/ns/k --type config`, '/dev/null'],
      { env: { ...clean, COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken } },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    // At a terminal, Ctrl-D hands over what was typed on the line; a second one, on nothing, ends the input.
    child.stdin.write('typed-value\u0004\u0004');
    // A command still waiting for its input is killed, not left behind: the test then fails on its code.
    const stuck = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await new Promise((resolve) => child.on('close', resolve));
    clearTimeout(stuck);
    expect(code, out).to.equal(0);
    expect(out).to.include(
      'coffer: reading standard input: type it (it shows as you type), then Ctrl-D',
    );
    expect(out).to.include('created tty/ns/k version 1 (config)');
    expect((await c.call('GET', '/v1/kv/tty/ns/k')).body.value).to.equal('typed-value');
    const piped = await runCoffer(['kv', 'put', 'tty/ns/piped', '--type', 'config'], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: c.rootToken,
    });
    expect(piped.stderr).to.equal('');
  });

  it('prints its version and the commit it was built from; its entry point is executable after a build', async () => {
    const run = await runCoffer(['--version'], {});
    expect(run.code).to.equal(0);
    const head = execFileSync('git', ['rev-parse', 'HEAD']).toString().trim();
    expect(run.stdout).to.match(
      new RegExp(`^coffer \\d+\\.\\d+\\.\\d+ \\(commit ${head}( with uncommitted changes)?\\)\\n$`),
    );
    expect(statSync(MAIN).mode & 0o111).to.equal(0o111);
  });

  it("with --remote also prints the server's version (GET /v1/sys/version, any valid token); --remote alone is a usage error", async () => {
    const local = await runCoffer(['--version'], {});
    const remote = await runCoffer(['--version', '--remote'], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: c.rootToken,
    });
    expect(remote.code, remote.stderr).to.equal(0);
    // The server in this test runs this same build.
    expect(remote.stdout).to.equal(`${local.stdout}server: ${local.stdout}`);
    const scoped = await c.token({
      scopes: [{ namespace: 'elsewhere', read: true }],
    });
    const answer = await c.call('GET', '/v1/sys/version', { token: scoped });
    expect(answer.status).to.equal(200);
    expect(Object.keys(answer.body).sort()).to.deep.equal(['commit', 'modified', 'version']);
    expect((await c.call('GET', '/v1/sys/version', { token: null })).status).to.equal(401);
    const noToken = await runCoffer(['--version', '--remote'], { COFFER_ADDR: c.url });
    expect(noToken.code).to.equal(2);
    expect(noToken.stdout).to.equal(local.stdout);
    const alone = await runCoffer(['--remote'], {});
    expect([alone.code, alone.stderr]).to.deep.equal([2, 'coffer: --remote goes with --version\n']);
  });

  it('says in one line what is missing: the store, or its audit directory', async () => {
    const missing = join(tempDir(), 'nothing-here');
    const noStore = await runCoffer(['audit', 'verify'], { ...env, COFFER_DATA_DIR: missing });
    expect(noStore.code).to.equal(2);
    expect(noStore.stderr).to.equal(`coffer: no Coffer store at ${missing} (COFFER_DATA_DIR)\n`);
    const bare = join(tempDir(), 'bare');
    mkdirSync(bare);
    const noAudit = await runCoffer(['audit', 'verify'], { ...env, COFFER_DATA_DIR: bare });
    expect(noAudit.code).to.equal(2);
    expect(noAudit.stderr).to.equal(
      `coffer: no audit directory at ${join(bare, 'audit')} (COFFER_AUDIT_DIR)\n`,
    );
  });

  it('warns of every COFFER_ variable it does not read, naming the closest real one', async () => {
    const run = await runCoffer(['audit', 'seal-report'], {
      ...env,
      COFFER_PORTT: '9999',
      COFFER_AUDIT_SYNC_EVERY: 'true',
      COFFER_NOTHING_LIKE_IT: 'x',
    });
    expect(run.code).to.equal(0);
    expect(run.stderr.split('\n').filter(Boolean)).to.deep.equal([
      'coffer: warning: COFFER_AUDIT_SYNC_EVERY is not a Coffer setting and is ignored; did you mean COFFER_AUDIT_SYNC_EVERY_ENTRY?',
      'coffer: warning: COFFER_NOTHING_LIKE_IT is not a Coffer setting and is ignored',
      'coffer: warning: COFFER_PORTT is not a Coffer setting and is ignored; did you mean COFFER_PORT?',
    ]);
  });

  it('refuses to start, creating nothing, when the TLS certificate file is missing: one line, exit 2', async () => {
    const { dir, env: serveEnv } = serveSettings(1, {
      COFFER_TLS_CERT: '/nonexistent/cert.pem',
      COFFER_TLS_KEY: '/nonexistent/key.pem',
    });
    const run = await runToExit(serveEnv);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.equal(
      'coffer: COFFER_TLS_CERT: cannot read /nonexistent/cert.pem (ENOENT)\n',
    );
    expect(readdirSync(dir)).to.deep.equal([]);
  });
});
