import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { command, startCommand } from '../support/process.js';

/** The program coffer run starts: prints what it was given, then exits as told, or waits for a signal. */
const PROGRAM = `
const given = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => /^(APP_|DB_|API_|LOG_|TLS_|PG|COFFER_)/.test(k) && k !== 'COFFER_ADDR'),
);
console.log(JSON.stringify({ env: given, argv: process.argv.slice(2) }));
const how = process.argv[2];
if (how === 'wait') {
  process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(42); });
  process.on('SIGHUP', () => console.log('got SIGHUP'));
  console.log('ready');
  // Never outlives coffer run: a test that fails before stopping it leaves no program behind.
  const parent = process.ppid;
  setInterval(() => { if (process.ppid !== parent) process.exit(3); }, 200);
} else if (how === 'die') {
  process.kill(process.pid, 'SIGTERM');
} else process.exit(Number(how ?? 0));
`;

const SECRET = 'pw-!$`"\\\'-ünï-\n-line';

describe('coffer run', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let dir: string;
  let program: string;
  let token: string;
  let env: Record<string, string>;
  let proxy: FaultProxy | undefined;

  before(async () => {
    c = await startTestCoffer();
    dir = tempDir();
    program = join(dir, 'program.cjs');
    writeFileSync(program, PROGRAM);
    await c.put('shop/prod/db_password', SECRET, 'secret');
    await c.put('shop/prod/api.url', 'https://api.example', 'config');
    await c.put('shop/prod/log-level', 'info', 'config');
    await c.put('shop/shared/tls_cert', 'CERT', 'config');
    await c.put('shop/clash/db_password', 'one', 'secret');
    await c.put('shop/clash/db-password', 'two', 'secret');
    await c.put('shop/digits/2fa_seed', 'seed', 'secret');
    token = await c.token({ role: 'reader' });
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: token };
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  after(async () => {
    await c.close();
  });

  const given = (stdout: string) =>
    JSON.parse(stdout.split('\n')[0]!) as { env: Record<string, string>; argv: string[] };

  it('runs the command with every value it may read as variables, by the one rule, and passes its exit code', async () => {
    const ran = await command(
      ['run', '--ns', 'shop/prod', '--ns', 'shop/shared', '--', process.execPath, program, '7'],
      env,
    );
    expect(ran.stderr).to.equal('');
    expect(ran.code).to.equal(7);
    expect(given(ran.stdout)).to.deep.equal({
      env: {
        DB_PASSWORD: SECRET,
        API_URL: 'https://api.example',
        LOG_LEVEL: 'info',
        TLS_CERT: 'CERT',
      },
      argv: ['7'],
    });
  });

  it('gives a config reader its config values only, and never passes the token on', async () => {
    const reader = await c.token({ role: 'config-reader' });
    const ran = await command(['run', '--ns', 'shop/prod', '--', process.execPath, program, '0'], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: reader,
    });
    expect(ran.code).to.equal(0);
    expect(given(ran.stdout).env).to.deep.equal({
      API_URL: 'https://api.example',
      LOG_LEVEL: 'info',
    });
  });

  it('takes --prefix, --only and --map', async () => {
    const ran = await command(
      [
        'run',
        '--ns',
        'shop/prod',
        '--prefix',
        'APP_',
        '--only',
        'db_password',
        '--only',
        'api.url',
        '--map',
        'db_password=PGPASSWORD',
        '--',
        process.execPath,
        program,
      ],
      env,
    );
    expect(ran.code).to.equal(0);
    expect(given(ran.stdout).env).to.deep.equal({
      PGPASSWORD: SECRET,
      APP_API_URL: 'https://api.example',
    });
  });

  it('refuses two keys that map to one variable, a key with no name, and an --only that finds nothing, naming them', async () => {
    const clash = await command(
      ['run', '--ns', 'shop/clash', '--', process.execPath, program],
      env,
    );
    expect(clash.code).to.equal(2);
    expect(clash.stderr).to.include('shop/clash/db-password').and.include('shop/clash/db_password');
    expect(clash.stderr).to.include('DB_PASSWORD');
    expect(clash.stdout, 'the command never ran').to.equal('');

    const twice = await command(
      [
        'run',
        '--ns',
        'shop/prod',
        '--ns',
        'shop/clash',
        '--only',
        'db_password',
        '--',
        process.execPath,
        program,
      ],
      env,
    );
    expect(twice.code).to.equal(2);
    expect(twice.stderr).to.include('shop/prod/db_password').and.include('shop/clash/db_password');

    const digits = await command(
      ['run', '--ns', 'shop/digits', '--', process.execPath, program],
      env,
    );
    expect(digits.code).to.equal(2);
    expect(digits.stderr).to.include('shop/digits/2fa_seed').and.include('--map');
    const mapped = await command(
      ['run', '--ns', 'shop/digits', '--map', '2fa_seed=APP_SEED', '--', process.execPath, program],
      env,
    );
    expect(given(mapped.stdout).env).to.deep.equal({ APP_SEED: 'seed' });

    const missing = await command(
      ['run', '--ns', 'shop/prod', '--only', 'nope', '--', process.execPath, program],
      env,
    );
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.include('nope');
    for (const r of [clash, twice, digits, missing]) expect(r.stderr).not.to.include(SECRET);
  });

  it('refuses a key that would set a variable changing how programs load or run (a config writer could run code with the secrets), unless named with --map; export too', async () => {
    await c.put(
      'shop/loader/node_options',
      '--import=data:text/javascript,console.log(1)',
      'config',
    );
    await c.put('shop/loader/ld-preload', '/tmp/evil.so', 'config');
    await c.put('shop/loader/db_password', SECRET, 'secret');
    const refused = await command(
      ['run', '--ns', 'shop/loader', '--', process.execPath, program],
      env,
    );
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('shop/loader/node_options (NODE_OPTIONS)');
    expect(refused.stderr).to.include('shop/loader/ld-preload (LD_PRELOAD)');
    expect(refused.stderr).to.include('--map');
    expect(refused.stdout, 'the command never ran').to.equal('');
    // A prefix that makes one does not get past it either.
    const prefixed = await command(
      [
        'run',
        '--ns',
        'shop/loader',
        '--only',
        'db_password',
        '--prefix',
        'LD_',
        '--',
        process.execPath,
        program,
      ],
      env,
    );
    expect(prefixed.code).to.equal(2);
    expect(prefixed.stderr).to.include('LD_DB_PASSWORD');
    const exported = await command(['export', '--ns', 'shop/loader'], env);
    expect(exported.code).to.equal(2);
    expect(exported.stdout).not.to.include('NODE_OPTIONS');
    // The operator's own choice: named with --map, it is set (and the other one left out).
    const chosen = await command(
      [
        'run',
        '--ns',
        'shop/loader',
        '--only',
        'node_options',
        '--map',
        'node_options=NODE_OPTIONS',
        '--',
        process.execPath,
        '-e',
        'console.log(JSON.stringify({ v: process.env.NODE_OPTIONS }))',
      ],
      env,
    );
    expect(chosen.code, chosen.stderr).to.equal(0);
    for (const r of [refused, prefixed, exported]) expect(r.stderr).not.to.include(SECRET);
  });

  it('refuses a value with a NUL byte (no variable can hold one) naming its key, never showing the value; run and export', async () => {
    await c.put('shop/nul/db_password', `${SECRET}\u0000rest`, 'secret');
    await c.put('shop/nul/other', 'fine', 'config');
    for (const args of [
      ['run', '--ns', 'shop/nul', '--', process.execPath, program],
      ['export', '--ns', 'shop/nul'],
      ['export', '--ns', 'shop/nul', '--format', 'shell'],
    ]) {
      const refused = await command(args, env);
      expect(refused.code, args.join(' ')).to.equal(2);
      expect(refused.stderr).to.include('shop/nul/db_password (DB_PASSWORD)').and.include('NUL');
      expect(refused.stderr + refused.stdout).not.to.include(SECRET);
    }
    const others = await command(
      ['run', '--ns', 'shop/nul', '--only', 'other', '--', process.execPath, program],
      env,
    );
    expect(others.code, others.stderr).to.equal(0);
  });

  it('exits 3 naming a namespace that gives no value (a typo), for run and export, unless --allow-empty', async () => {
    const typo = await command(
      ['run', '--ns', 'shop/prod', '--ns', 'shop/prd', '--', process.execPath, program],
      env,
    );
    expect(typo.code).to.equal(3);
    expect(typo.stderr).to.include('shop/prd').and.include('--allow-empty');
    expect(typo.stderr).not.to.include('shop/prod:');
    expect(typo.stdout, 'the command never ran').to.equal('');
    const exported = await command(['export', '--ns', 'shop/prd'], env);
    expect(exported.code).to.equal(3);
    expect(exported.stderr).to.include('shop/prd');
    const allowed = await command(
      ['run', '--ns', 'shop/prd', '--allow-empty', '--', process.execPath, program],
      env,
    );
    expect(allowed.code).to.equal(0);
    expect(given(allowed.stdout).env).to.deep.equal({});
  });

  it('passes signals on to the command and exits with its code', async () => {
    const running = startCommand(
      ['run', '--ns', 'shop/prod', '--', process.execPath, program, 'wait'],
      env,
    );
    await eventually(() => running.stdout().includes('ready'));
    running.child.kill('SIGHUP');
    await eventually(() => running.stdout().includes('got SIGHUP'));
    running.child.kill('SIGTERM');
    const ended = await running.done;
    expect(ended.stdout).to.include('got SIGTERM');
    expect(ended.code).to.equal(42);
  });

  it('ends by the signal that ended the command, and says 127 for a command that does not exist', async () => {
    const died = await command(
      ['run', '--ns', 'shop/prod', '--', process.execPath, program, 'die'],
      env,
    );
    expect(died.signal).to.equal('SIGTERM');
    const nothing = await command(
      ['run', '--ns', 'shop/prod', '--', join(dir, 'no-such-program')],
      env,
    );
    expect(nothing.code).to.equal(127);
    expect(nothing.stderr).to.include('command not found');
  });

  it('says what is wrong in one line: no token, a namespace it may not read, Coffer unreachable', async () => {
    const noToken = await command(['run', '--ns', 'shop/prod', '--', process.execPath, program], {
      COFFER_ADDR: c.url,
    });
    expect(noToken.code).to.equal(2);
    expect(noToken.stderr).to.match(/^coffer: no token: set COFFER_TOKEN/);
    const other = await c.token({ scopes: [{ namespace: 'elsewhere', read: true }] });
    const denied = await command(['run', '--ns', 'shop/prod', '--', process.execPath, program], {
      COFFER_ADDR: c.url,
      COFFER_TOKEN: other,
    });
    expect(denied.code).to.equal(4);
    expect(denied.stderr.trim().split('\n')).to.have.length(1);
    proxy = await startFaultProxy(c.url, () => 'pass');
    const url = proxy.url;
    await proxy.close();
    const down = await command(['run', '--ns', 'shop/prod', '--', process.execPath, program], {
      ...env,
      COFFER_ADDR: url,
    });
    expect(down.code).to.equal(5);
    expect(down.stderr).to.include('cannot reach');
    for (const r of [noToken, denied, down]) expect(r.stderr).not.to.include(token);
  });

  it('--watch restarts the command with the new values when one changes, and --watch-signal sends a signal instead', async () => {
    await c.put('watch/app/db_password', 'first', 'secret');
    const running = startCommand(
      ['run', '--ns', 'watch/app', '--watch', '--', process.execPath, program, 'wait'],
      env,
    );
    await eventually(() => running.stdout().includes('ready'));
    expect(given(running.stdout()).env).to.deep.equal({ DB_PASSWORD: 'first' });
    await c.put('watch/app/db_password', 'second', 'secret');
    // The first command gets SIGTERM (it says so and exits 42), then a new one starts with the new value.
    await eventually(
      () =>
        running
          .stdout()
          .split('\n')
          .filter((l) => l === 'ready').length === 2,
    );
    const lines = running.stdout().split('\n');
    expect(lines).to.include('got SIGTERM');
    const restarted = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l).env);
    expect(restarted).to.deep.equal([{ DB_PASSWORD: 'first' }, { DB_PASSWORD: 'second' }]);
    running.child.kill('SIGTERM');
    expect((await running.done).code).to.equal(42);

    const signalled = startCommand(
      [
        'run',
        '--ns',
        'watch/app',
        '--watch',
        '--watch-signal',
        'HUP',
        '--',
        process.execPath,
        program,
        'wait',
      ],
      env,
    );
    await eventually(() => signalled.stdout().includes('ready'));
    await c.put('watch/app/new_key', 'added', 'secret');
    await eventually(() => signalled.stdout().includes('got SIGHUP'));
    expect(
      signalled
        .stdout()
        .split('\n')
        .filter((l) => l === 'ready'),
    ).to.have.length(1);
    signalled.child.kill('SIGTERM');
    expect((await signalled.done).code).to.equal(42);
  });

  it('--watch follows all its namespaces on one change stream, and restarts the command only when a variable it was given changed', async () => {
    await c.put('watch/one/app_flag', 'on', 'config');
    await c.put('watch/two/db_user', 'alice', 'secret');
    await c.put('watch/two/unused', 'x', 'secret');
    const me = await c.call('GET', '/v1/auth/me', { token });
    const since = new Date().toISOString();
    const running = startCommand(
      [
        'run',
        '--ns',
        'watch/one',
        '--ns',
        'watch/two',
        '--only',
        'app_flag',
        '--only',
        'db_user',
        '--',
        process.execPath,
        program,
        'wait',
      ].flatMap((arg) => (arg === 'watch/two' ? [arg, '--watch'] : [arg])),
      env,
    );
    await eventually(() => running.stdout().includes('ready'));
    const starts = () =>
      running
        .stdout()
        .split('\n')
        .filter((l) => l === 'ready').length;
    // Changes that leave its variables as they were: a key it does not take, a key's metadata.
    await c.put('watch/two/unused', 'y', 'secret');
    await c.call('PATCH', '/v1/kv/watch/one/app_flag', {
      json: { custom_metadata: { by: 'ops' } },
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect(starts()).to.equal(1);
    await c.put('watch/two/db_user', 'bob', 'secret');
    await eventually(() => starts() === 2);
    const given = running
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l).env);
    expect(given.at(-1)).to.deep.equal({ APP_FLAG: 'on', DB_USER: 'bob' });
    running.child.kill('SIGTERM');
    await running.done;
    // One stream for both namespaces; no held request per namespace.
    const lines = auditLines(c.config.audit.dir!).filter(
      (l) => l.token_id === me.body.id && l.ts >= since,
    );
    expect(lines.filter((l) => l.kind === 'request' && l.action === 'events')).to.have.length(1);
    expect(lines.filter((l) => String(l.action).includes('wait'))).to.deep.equal([]);
  });

  it('--watch renews its token before it expires', async function () {
    this.timeout(20_000);
    const made = (
      await c.call('POST', '/v1/auth/token', { json: { role: 'reader', expires_in: 2 } })
    ).body as { token: string; expires_at: string };
    const short = made.token;
    const running = startCommand(
      ['run', '--ns', 'watch/app', '--watch', '--', process.execPath, program, 'wait'],
      { COFFER_ADDR: c.url, COFFER_TOKEN: short },
    );
    await eventually(() => running.stdout().includes('ready'));
    // Past the lifetime it was made with: only a renewal keeps it.
    await eventually(() => Date.now() > Date.parse(made.expires_at) + 1000, {
      what: 'the first expiry passed',
    });
    expect((await c.call('GET', '/v1/auth/me', { token: short })).status).to.equal(200);
    running.child.kill('SIGTERM');
    expect((await running.done).code).to.equal(42);
  });

  describe('with an encrypted fallback copy', () => {
    let keyFile: string;
    let copy: string;
    let fallbackEnv: Record<string, string>;
    const withFallback = (ns: string, extra: string[] = []) => [
      'run',
      '--ns',
      ns,
      '--fallback',
      copy,
      '--fallback-key-file',
      keyFile,
      ...extra,
      '--',
      process.execPath,
      program,
    ];

    before(async () => {
      keyFile = join(dir, 'fallback.key');
      writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
      copy = join(dir, 'copy.json');
    });

    it('writes the copy (0600, no value in plaintext) while Coffer answers, and starts from it when Coffer is down', async () => {
      proxy = await startFaultProxy(c.url, () => 'pass');
      fallbackEnv = { ...env, COFFER_ADDR: proxy.url };
      const up = await command(withFallback('shop/prod'), fallbackEnv);
      expect(up.code).to.equal(0);
      expect(statSync(copy).mode & 0o777).to.equal(0o600);
      await proxy.close();

      const down = await command(withFallback('shop/prod'), fallbackEnv);
      expect(down.code).to.equal(0);
      expect(down.stderr).to.include('cannot reach').and.include('starting from the fallback copy');
      expect(given(down.stdout).env).to.deep.equal(given(up.stdout).env);
      expect(given(down.stdout).env.DB_PASSWORD).to.equal(SECRET);

      // No value, in any form we know, in any file left behind.
      for (const name of readdirSync(dir)) {
        const bytes = readFileSync(join(dir, name));
        for (const value of [SECRET, 'https://api.example', 'pw-!$'])
          for (const form of [
            value,
            Buffer.from(value).toString('base64'),
            Buffer.from(value).toString('hex'),
          ])
            expect(
              bytes.includes(form),
              `${name} holds ${form === value ? 'a value' : 'an encoding of a value'}`,
            ).to.equal(false);
      }
    });

    it('refuses the copy when it is older than --fallback-max-age', async () => {
      // Until the copy is more than a second old, by the time it records.
      const writtenAt = Date.parse(JSON.parse(readFileSync(copy, 'utf8')).written_at);
      await eventually(() => Date.now() > writtenAt + 1100, { what: 'the copy a second old' });
      const old = await command(
        withFallback('shop/prod', ['--fallback-max-age', '1s']),
        fallbackEnv,
      );
      expect(old.code).to.equal(5);
      expect(old.stderr).to.include('--fallback-max-age').and.include('refused');
      expect(old.stdout, 'the command never ran').to.equal('');
    });

    it('refuses the copy for another namespace', async () => {
      const other = await command(withFallback('shop/shared'), fallbackEnv);
      expect(other.code).to.equal(5);
      expect(other.stderr).to.include('shop/prod').and.include('refused');
      expect(other.stdout).to.equal('');
    });

    it('refuses a tampered copy: a changed byte of the ciphertext, or a changed time', async () => {
      const original = readFileSync(copy, 'utf8');
      const parsed = JSON.parse(original);
      const bytes = Buffer.from(parsed.ciphertext, 'base64');
      bytes[5] = bytes[5]! ^ 1;
      writeFileSync(copy, JSON.stringify({ ...parsed, ciphertext: bytes.toString('base64') }));
      const flipped = await command(withFallback('shop/prod'), fallbackEnv);
      expect(flipped.code).to.equal(5);
      expect(flipped.stderr).to.include('failed its check');

      writeFileSync(copy, JSON.stringify({ ...parsed, written_at: new Date().toISOString() }));
      const freshened = await command(withFallback('shop/prod'), fallbackEnv);
      expect(freshened.code).to.equal(5);
      expect(freshened.stderr).to.include('failed its check');
      expect(freshened.stdout).to.equal('');
      writeFileSync(copy, original);
    });

    it('takes COFFER_FALLBACK_KEY only as 64 hex digits or base64, never 32 characters as raw key bytes', async () => {
      const viaEnv = (key: string) =>
        command(
          [
            'run',
            '--ns',
            'shop/prod',
            '--fallback',
            join(dir, 'env-copy.json'),
            '--',
            process.execPath,
            program,
          ],
          { ...env, COFFER_FALLBACK_KEY: key },
        );
      const password = await viaEnv('correct-horse-battery-staple-123');
      expect(password.code).to.equal(2);
      expect(password.stderr).to.include(
        'COFFER_FALLBACK_KEY: not a 32-byte key written as 64 hex digits or base64',
      );
      expect(password.stderr).not.to.include('correct-horse');
      expect((await viaEnv(randomBytes(32).toString('hex'))).code).to.equal(0);
      expect((await viaEnv(randomBytes(32).toString('base64'))).code).to.equal(0);
    });

    it('never uses the copy when Coffer answers no (403)', async () => {
      const other = await c.token({ scopes: [{ namespace: 'elsewhere', read: true }] });
      proxy = await startFaultProxy(
        c.url,
        () => 'pass',
        Number(new URL(fallbackEnv.COFFER_ADDR!).port),
      );
      const denied = await command(withFallback('shop/prod'), {
        ...fallbackEnv,
        COFFER_TOKEN: other,
      });
      expect(denied.code).to.equal(4);
      expect(denied.stdout).to.equal('');
      // Nor when the token file cannot be read: nothing was asked of Coffer, so it is no outage.
      const { COFFER_TOKEN: _, ...withoutToken } = fallbackEnv;
      const unread = await command(withFallback('shop/prod'), {
        ...withoutToken,
        COFFER_TOKEN_FILE: join(dir, 'no-such-token'),
      });
      expect(unread.code).to.equal(2);
      expect(unread.stderr).to.include('COFFER_TOKEN_FILE').and.not.include('fallback copy');
      expect(unread.stdout, 'the command never ran').to.equal('');
    });
  });
});
