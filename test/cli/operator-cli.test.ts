import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { runCoffer } from '../support/process.js';
import { seedStore } from '../support/seed.js';

const coffer = runCoffer;

describe('coffer operator (CLI)', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  before(async () => {
    c = await startTestCoffer();
    await seedStore(c.storage, c.app.keyring.current(), 2000);
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken };
  });
  after(async () => {
    await c.close();
  });

  it('status shows the provider, versions and record counts', async () => {
    const run = await coffer(['operator', 'status'], env);
    expect(run.code).to.equal(0);
    expect(run.stdout).to.match(/provider: local\s+active version: 1/);
    expect(run.stdout).to.match(/^1 \*\s+\S+\s+\d+\s+\d+$/m);
  });

  it('rotate, then rewrap --retire: progress lines off a terminal, then the old version is gone', async () => {
    const rotated = await coffer(['operator', 'rotate'], env);
    expect(rotated.code).to.equal(0);
    expect(rotated.stdout).to.include('active keyring version 1 -> 2');
    const rewrapped = await coffer(['operator', 'rewrap', '--retire', '--batch-size', '100'], env);
    expect(rewrapped.code, rewrapped.stderr).to.equal(0);
    expect(rewrapped.stdout).to.include('rewrapping onto keyring version 2');
    expect(rewrapped.stdout).to.match(/done: \d+ records examined, \d+ rewrapped, 0 failed/);
    expect(rewrapped.stdout).to.include(
      'retired keyring version 1 (no record used it any more); versions left in the keyring: 2',
    );
    const status = await coffer(['operator', 'status'], env);
    expect(status.stdout).to.match(/^2 \*/m).and.not.match(/^1 /m);
  });

  it('needs COFFER_TOKEN from the environment, never an argument, and says so', async () => {
    const run = await coffer(['operator', 'status'], { COFFER_ADDR: c.url });
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include('no token: set COFFER_TOKEN');
    const wrong = await coffer(['operator', 'status'], {
      ...env,
      COFFER_TOKEN: 'not-the-root-token',
    });
    expect(wrong.code, 'denied').to.equal(4);
    expect(wrong.stderr).to.include('401');
    expect(wrong.stderr).to.not.include('not-the-root-token');
  });

  it('refuses an unknown command and a bad batch size', async () => {
    expect((await coffer(['operator', 'explode'], env)).code).to.equal(2);
    expect((await coffer(['operator', 'rewrap', '--batch-size', 'lots'], env)).code).to.equal(2);
  });

  it('migrate-key --to FILE moves the keyring to a new master key; relative paths are taken from the current directory', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'new-key.json'),
      JSON.stringify({ key_provider: 'local', master_key_file: 'new.key' }),
    );
    // migrate-key never creates a key: the operator makes the new key file first.
    const refused = await coffer(['operator', 'migrate-key', '--to', 'new-key.json'], env, dir);
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.include(`there is no master key file at ${join(dir, 'new.key')}`);
    expect(existsSync(join(dir, 'new.key'))).to.equal(false);
    writeFileSync(join(dir, 'new.key'), randomBytes(32), { mode: 0o600 });
    const run = await coffer(['operator', 'migrate-key', '--to', 'new-key.json'], env, dir);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.include(
      `migrated: the keyring is now wrapped by local master key file ${join(dir, 'new.key')} (was local master key file `,
    );
    expect(existsSync(join(dir, 'new.key'))).to.equal(true);
    // It names the variables to set, not just "these settings".
    expect(run.stdout).to.include(
      `  COFFER_KEY_PROVIDER=local\n  COFFER_MASTER_KEY_FILE=${join(dir, 'new.key')}\n`,
    );
    const status = await coffer(['operator', 'status'], env);
    expect(status.stdout).to.match(
      new RegExp(
        `master key: local master key file ${join(dir, 'new.key')} \\(migrated at \\d{4}-`,
      ),
    );
    expect((await c.call('GET', '/v1/kv/seed/ns1/k1')).status).to.equal(200);

    expect((await coffer(['operator', 'migrate-key'], env)).code).to.equal(2);
    const missing = await coffer(['operator', 'migrate-key', '--to', 'absent.json'], env, dir);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.include('--to absent.json: no such file or directory');
  });

  it('prints usage instead of starting a server when run bare; help is exit 0; each command has its own --help', async () => {
    const bare = await coffer([], {});
    expect(bare.code).to.equal(2);
    expect(bare.stderr).to.match(/^usage: coffer <command>/);
    expect(bare.stdout).to.not.include('listening');
    for (const args of [['help'], ['--help'], ['-h']]) {
      const help = await coffer(args, {});
      expect(help.code, args.join(' ')).to.equal(0);
      expect(help.stdout).to.match(/^usage: coffer <command>/);
    }
    const group = await coffer(['help', 'operator'], {});
    expect(group.code).to.equal(0);
    expect(group.stdout).to.match(/^usage: coffer operator <command>/);
    const rotate = await coffer(['operator', 'rotate', '--help'], {});
    expect(rotate.code).to.equal(0);
    expect(rotate.stdout).to.match(/^usage: coffer operator rotate\n/);
    const migrate = await coffer(['operator', 'migrate-key', '--help'], {});
    expect(migrate.stdout).to.match(/^usage: coffer operator migrate-key --to FILE\n/);
    // Every command's help is exit 0 and shows an example.
    for (const args of [
      ['openapi', '--help'],
      ['operator', '--help'],
      ['whoami', '--help'],
      ['logout', '--help'],
    ]) {
      const help = await coffer(args, {});
      expect(help.code, args.join(' ')).to.equal(0);
      expect(help.stdout, args.join(' ')).to.match(new RegExp(`^usage: coffer ${args[0]}`));
      expect(help.stdout, args.join(' ')).to.include('\nexamples:\n');
    }
  });
});
