import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { generateToken } from '../src/auth/token-format.js';
import { selfSignedCertificate } from './support/certificates.js';
import { tempDir } from './support/harness.js';
import { MAIN, runCoffer, runToExit, startProcess } from './support/process.js';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

async function me(url: string, token: string, init: RequestInit = {}): Promise<number> {
  return (
    await fetch(`${url}/v1/auth/me`, { headers: { authorization: `Bearer ${token}` }, ...init })
  ).status;
}

describe('start-up (the coffer process)', function () {
  this.timeout(30_000);

  it('on first start creates a 0600 master key with one log line, prints a root token once, stores only its hash', async () => {
    const dir = tempDir();
    const env = {
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
    };
    const first = await startProcess(env);
    const keyFile = join(dir, 'keys', 'master.key');
    expect(statSync(keyFile).mode & 0o777).to.equal(0o600);
    expect(statSync(keyFile).size).to.equal(32);
    expect(
      first
        .stdout()
        .split('\n')
        .filter((l) => l.includes('generated a new local master key')),
    ).to.have.length(1);
    const token = /(cfr_[0-9A-Za-z]{16}_[0-9A-Za-z]{43})/.exec(first.stderr())?.[1];
    expect(token).to.be.a('string');
    expect(first.stdout()).to.not.include(token);
    expect(await me(first.url, token!)).to.equal(200);
    await first.stop();

    for (const file of filesUnder(dir)) {
      const bytes = readFileSync(file);
      expect(bytes.includes(Buffer.from(token!)), file).to.equal(false);
      expect(bytes.includes(Buffer.from(token!.slice(21))), file).to.equal(false);
    }

    const second = await startProcess(env);
    expect(second.stderr()).to.not.match(/cfr_/);
    expect(second.stdout()).to.not.include('master key');
    expect(await me(second.url, token!)).to.equal(200);
    await second.stop();
  });

  it('COFFER_ROOT_TOKEN replaces the stored root token at start-up', async () => {
    const dir = tempDir();
    const env = { COFFER_DATA_DIR: join(dir, 'data'), COFFER_MASTER_KEY_FILE: join(dir, 'k') };
    const oldRoot = generateToken().value;
    const a = await startProcess({ ...env, COFFER_ROOT_TOKEN: oldRoot });
    expect(a.stderr()).to.not.include('cfr_');
    expect(await me(a.url, oldRoot)).to.equal(200);
    await a.stop();
    const newRoot = 'Chosen-Root-Token-of-at-least-32-chars-7';
    const b = await startProcess({ ...env, COFFER_ROOT_TOKEN: newRoot });
    expect(b.stdout()).to.not.include(newRoot);
    expect(await me(b.url, newRoot)).to.equal(200);
    expect(await me(b.url, oldRoot)).to.equal(401);
    await b.stop();
  });

  it('logs readable lines on a terminal and JSON lines otherwise', async () => {
    const dir = tempDir();
    const env = `COFFER_DATA_DIR=${join(dir, 'data')} COFFER_MASTER_KEY_FILE=${join(dir, 'k')} COFFER_PORT=0 COFFER_WORKERS=1`;
    // `script` runs the server on a pseudo-terminal; it is stopped once it says it listens (or after 40 s).
    const run = spawn(
      'timeout',
      [
        '-s',
        'INT',
        '40',
        'script',
        '-qec',
        `env ${env} ${process.execPath} ${MAIN} serve`,
        '/dev/null',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let stdout = '';
    await new Promise<void>((resolve) => {
      run.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (/coffer listening/.test(stdout)) run.kill('SIGINT');
      });
      run.once('close', () => resolve());
    });
    expect(stdout).to.match(/INFO.*coffer listening/);
    expect(stdout).to.not.match(/^\{"level"/m);
  });

  it('creates every file 0600 and every directory 0700, whatever the umask', async () => {
    const dir = tempDir();
    const previous = process.umask(0o002);
    let p: Awaited<ReturnType<typeof startProcess>>;
    try {
      p = await startProcess({
        COFFER_DATA_DIR: join(dir, 'data'),
        COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
      });
    } finally {
      process.umask(previous);
    }
    await p.stop();
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      const path = join(entry.parentPath, entry.name);
      expect((statSync(path).mode & 0o777).toString(8), path).to.equal(
        entry.isDirectory() ? '700' : '600',
      );
    }
  });

  it('never makes a new master key for an existing store: a lost key file is one line naming the key the store needs', async () => {
    const dir = tempDir();
    const keyFile = join(dir, 'keys', 'master.key');
    const env = {
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: keyFile,
      COFFER_ROOT_TOKEN: generateToken().value,
    };
    const p = await startProcess(env);
    await p.stop();
    rmSync(keyFile);
    const result = await runToExit(env);
    expect(result.code).to.equal(2);
    expect(result.stderr.trim().split('\n')).to.have.length(1);
    expect(result.stderr).to.include(
      `coffer: COFFER_MASTER_KEY_FILE: there is no master key file at ${keyFile}; the store in ${join(dir, 'data')} needs its own key, local master key file ${keyFile}: restore that file from your backup`,
    );
    expect(existsSync(keyFile)).to.equal(false);
    // The offline commands never make one either.
    const verify = await runCoffer(['audit', 'verify'], env, dir);
    expect(verify.code).to.not.equal(0);
    expect(existsSync(keyFile)).to.equal(false);
    expect(existsSync(join(dir, 'keys', 'master.key'))).to.equal(false);
  });

  it('warns when the key file exists but the data directory holds no store (a mistyped path)', async () => {
    const dir = tempDir();
    const env = {
      COFFER_MASTER_KEY_FILE: join(dir, 'k'),
      COFFER_ROOT_TOKEN: generateToken().value,
    };
    const a = await startProcess({ ...env, COFFER_DATA_DIR: join(dir, 'data') });
    await a.stop();
    const b = await startProcess({ ...env, COFFER_DATA_DIR: join(dir, 'dta') });
    expect(b.stdout()).to.include('holds no store yet, but the master key already exists');
    await b.stop();
  });

  it('keeps keys, versions and tokens across a restart', async () => {
    const dir = tempDir();
    const root = generateToken().value;
    const env = {
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'k'),
      COFFER_ROOT_TOKEN: root,
    };
    const a = await startProcess(env);
    const auth = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
    for (const value of ['one', 'two']) {
      await fetch(`${a.url}/v1/kv/keep/pw`, {
        method: 'PUT',
        headers: auth,
        body: JSON.stringify({ value, type: 'secret' }),
      });
    }
    await fetch(`${a.url}/v1/kv/keep/cfg`, {
      method: 'PUT',
      headers: auth,
      body: JSON.stringify({ value: 'c', type: 'config' }),
    });
    const created = (await (
      await fetch(`${a.url}/v1/auth/token`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ role: 'reader' }),
      })
    ).json()) as { token: string };
    const revoked = (await (
      await fetch(`${a.url}/v1/auth/token`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ role: 'reader' }),
      })
    ).json()) as { token: string };
    await fetch(`${a.url}/v1/auth/token/${revoked.token}`, { method: 'DELETE', headers: auth });
    await a.stop();

    const b = await startProcess(env);
    const get = async (path: string, token = root) =>
      (
        await fetch(`${b.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
      ).json() as Promise<Record<string, unknown>>;
    expect((await get('/v1/kv/keep/pw')).value).to.equal('two');
    expect((await get('/v1/kv/keep/pw?version=1')).value).to.equal('one');
    expect((await get('/v1/kv/keep/cfg')).value).to.equal('c');
    expect((await get('/v1/kv/keep/pw', created.token)).value).to.equal('two');
    expect(await me(b.url, revoked.token)).to.equal(401);
    const put = await fetch(`${b.url}/v1/kv/keep/pw`, {
      method: 'PUT',
      headers: auth,
      body: JSON.stringify({ value: 'three', type: 'secret' }),
    });
    expect(((await put.json()) as { version: number }).version).to.equal(3);
    await b.stop();
  });

  it('serves HTTPS when COFFER_TLS_CERT and COFFER_TLS_KEY are both set', async () => {
    const dir = tempDir();
    selfSignedCertificate(dir);
    const root = generateToken().value;
    const p = await startProcess({
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'k'),
      COFFER_ROOT_TOKEN: root,
      COFFER_TLS_CERT: join(dir, 'tls.crt'),
      COFFER_TLS_KEY: join(dir, 'tls.key'),
    });
    expect(p.url).to.match(/^https:\/\//);
    const status = execFileSync('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '--cacert',
      join(dir, 'tls.crt'),
      '-H',
      `Authorization: Bearer ${root}`,
      `${p.url}/v1/auth/me`,
    ]).toString();
    expect(status).to.equal('200');
    // HSTS, over TLS only.
    const headers = execFileSync('curl', [
      '-s',
      '-D',
      '-',
      '-o',
      '/dev/null',
      '--cacert',
      join(dir, 'tls.crt'),
      `${p.url}/v1/openapi.json`,
    ]).toString();
    expect(headers).to.match(/strict-transport-security: max-age=/i);
    await p.stop();
  });

  describe('refuses to start, with one line naming the setting and exit code 2', () => {
    const cases: [string, (dir: string) => Record<string, string>, RegExp][] = [
      ['a non-numeric port', () => ({ COFFER_PORT: 'eighty' }), /COFFER_PORT/],
      ['a port out of range', () => ({ COFFER_PORT: '70000' }), /COFFER_PORT/],
      ['a zero default TTL', () => ({ COFFER_DEFAULT_TTL: '0' }), /COFFER_DEFAULT_TTL/],
      [
        'a default TTL above the maximum',
        () => ({ COFFER_DEFAULT_TTL: '100', COFFER_MAX_TTL: '50' }),
        /COFFER_DEFAULT_TTL/,
      ],
      ['a zero value limit', () => ({ COFFER_MAX_VALUE_BYTES: '0' }), /COFFER_MAX_VALUE_BYTES/],
      [
        'a TLS certificate without a key',
        () => ({ COFFER_TLS_CERT: '/tmp/x.crt' }),
        /COFFER_TLS_KEY/,
      ],
      ['an unknown log level', () => ({ COFFER_LOG_LEVEL: 'loud' }), /COFFER_LOG_LEVEL/],
      [
        'a root token with spaces',
        () => ({ COFFER_ROOT_TOKEN: 'has spaces in it' }),
        /COFFER_ROOT_TOKEN/,
      ],
      [
        'a config file with an unknown setting',
        (dir) => {
          writeFileSync(join(dir, 'c.json'), JSON.stringify({ colour: 'red' }));
          return { COFFER_CONFIG: join(dir, 'c.json') };
        },
        /colour/,
      ],
      [
        'a custom role with a bad pattern',
        (dir) => {
          writeFileSync(
            join(dir, 'c.json'),
            JSON.stringify({
              roles: { ops: [{ namespaces: ['a*b'], actions: ['read'], types: ['config'] }] },
            }),
          );
          return { COFFER_CONFIG: join(dir, 'c.json') };
        },
        /roles: .*a\*b/,
      ],
      [
        'a COFFER_PG_URL that is not a URL, named and never shown (it may hold a password)',
        () => ({ COFFER_STORAGE: 'postgres', COFFER_PG_URL: 'postgres://u:short-root-token@[x' }),
        /^coffer: COFFER_PG_URL: is not a URL \(postgres:\/\/user@host:5432\/db; the value is not shown/,
      ],
      [
        'a custom role redefining a built-in one',
        (dir) => {
          writeFileSync(
            join(dir, 'c.json'),
            JSON.stringify({
              roles: { admin: [{ namespaces: ['*'], actions: ['read'], types: ['config'] }] },
            }),
          );
          return { COFFER_CONFIG: join(dir, 'c.json') };
        },
        /roles: .*built in/,
      ],
      [
        'a master key file readable by others',
        (dir) => {
          writeFileSync(join(dir, 'open.key'), Buffer.alloc(32, 1));
          chmodSync(join(dir, 'open.key'), 0o644);
          return { COFFER_MASTER_KEY_FILE: join(dir, 'open.key') };
        },
        /COFFER_MASTER_KEY_FILE: .*mode 0644/,
      ],
      [
        'a master key file of the wrong length',
        (dir) => {
          writeFileSync(join(dir, 'short.key'), Buffer.alloc(16, 1), { mode: 0o600 });
          return { COFFER_MASTER_KEY_FILE: join(dir, 'short.key') };
        },
        /COFFER_MASTER_KEY_FILE: .*32 bytes/,
      ],
      [
        'a root token shorter than 32 characters',
        () => ({ COFFER_ROOT_TOKEN: 'short-root-token' }),
        /COFFER_ROOT_TOKEN: is 16 characters; a root token must be at least 32 \(make one with: openssl rand -base64 32\)/,
      ],
      [
        'a root token of 32 × a: long enough, but not random',
        () => ({ COFFER_ROOT_TOKEN: 'a'.repeat(32) }),
        /COFFER_ROOT_TOKEN: has only 1 distinct characters; a root token must have at least 16 \(make a random one with: openssl rand -base64 32\)/,
      ],
      [
        'a root token of a short pattern repeated',
        () => ({ COFFER_ROOT_TOKEN: 'abcdefgh12345'.repeat(4) }),
        /COFFER_ROOT_TOKEN: has only 13 distinct characters/,
      ],
      [
        'a data directory that cannot be created (under /proc)',
        () => ({ COFFER_DATA_DIR: '/proc/coffer-test/data' }),
        /COFFER_DATA_DIR: cannot create \/proc\/coffer-test/,
      ],
      [
        'an audit directory under a file',
        (dir) => {
          writeFileSync(join(dir, 'plain'), 'x');
          return { COFFER_AUDIT_DIR: join(dir, 'plain', 'audit') };
        },
        /COFFER_AUDIT_DIR: .*plain is a file, not a directory/,
      ],
      [
        'a master key file that is a dangling link',
        (dir) => {
          symlinkSync(join(dir, 'gone.key'), join(dir, 'link.key'));
          return { COFFER_MASTER_KEY_FILE: join(dir, 'link.key') };
        },
        /COFFER_MASTER_KEY_FILE: .*link.key is a symbolic link to .*gone.key, which does not exist/,
      ],
    ];
    for (const [name, make, pattern] of cases) {
      it(name, async () => {
        const dir = tempDir();
        const result = await runToExit({
          COFFER_DATA_DIR: join(dir, 'data'),
          COFFER_MASTER_KEY_FILE: join(dir, 'k'),
          ...make(dir),
        });
        expect(result.code).to.equal(2);
        const lines = result.stderr.trim().split('\n');
        expect(lines, result.stderr).to.have.length(1);
        expect(lines[0])
          .to.match(/^coffer: /)
          .and.match(pattern);
        expect(result.stderr).to.not.include('has spaces in it');
        expect(result.stderr).to.not.include('short-root-token');
        // Refused before anything was created.
        expect(existsSync(join(dir, 'k')), 'no master key was created').to.equal(false);
      });
    }

    it('a port in use, naming COFFER_PORT', async () => {
      const dir = tempDir();
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      try {
        const port = (blocker.address() as AddressInfo).port;
        const result = await runToExit({
          COFFER_DATA_DIR: join(dir, 'data'),
          COFFER_MASTER_KEY_FILE: join(dir, 'k'),
          COFFER_PORT: String(port),
        });
        expect(result.code).to.equal(2);
        expect(result.stderr.trim()).to.match(
          new RegExp(`^coffer: COFFER_PORT: port ${port} on 127.0.0.1 is already in use`),
        );
        expect(existsSync(join(dir, 'k')), 'no master key was created').to.equal(false);
      } finally {
        blocker.close();
      }
    });

    it('a master key that does not open the stored keyring', async () => {
      const dir = tempDir();
      const env = {
        COFFER_DATA_DIR: join(dir, 'data'),
        COFFER_MASTER_KEY_FILE: join(dir, 'a.key'),
        COFFER_ROOT_TOKEN: generateToken().value,
      };
      const p = await startProcess(env);
      await p.stop();
      mkdirSync(join(dir, 'other'));
      writeFileSync(join(dir, 'other', 'b.key'), Buffer.alloc(32, 7), { mode: 0o600 });
      const result = await runToExit({
        ...env,
        COFFER_MASTER_KEY_FILE: join(dir, 'other', 'b.key'),
      });
      expect(result.code).to.equal(2);
      expect(result.stderr.trim()).to.match(
        /^coffer: COFFER_MASTER_KEY_FILE: the master key does not open the keyring/,
      );
    });
  });
});
