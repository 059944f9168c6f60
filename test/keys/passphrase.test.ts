import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { generateToken } from '../../src/auth/token-format.js';
import { tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { runToExit, startProcess } from '../support/process.js';

describe('local provider with a passphrase (COFFER_MASTER_PASSPHRASE_FILE)', function () {
  this.timeout(60_000);
  const passphrase = 'correct horse battery staple';

  function setup(): { dir: string; env: Record<string, string>; root: string } {
    const dir = tempDir();
    writeFileSync(join(dir, 'pass'), `${passphrase}\n`, { mode: 0o600 });
    const root = generateToken().value;
    return {
      dir,
      root,
      env: {
        COFFER_DATA_DIR: join(dir, 'data'),
        COFFER_MASTER_PASSPHRASE_FILE: join(dir, 'pass'),
        COFFER_MASTER_KEY_FILE: join(dir, 'unused.key'),
        COFFER_ROOT_TOKEN: root,
        COFFER_WORKERS: '1',
      },
    };
  }

  it('derives the master key from the passphrase: secrets survive a restart, no key file is written, the passphrase is stored nowhere', async () => {
    const { dir, env, root } = setup();
    let p = await startProcess(env);
    expect(
      (
        await send(p.url, 'PUT', '/v1/kv/pp/k', root, {
          value: 'behind a passphrase',
          type: 'secret',
        })
      ).status,
    ).to.equal(201);
    await p.stop();
    expect(existsSync(join(dir, 'unused.key'))).to.equal(false);
    for (const f of readdirSync(join(dir, 'data'), { recursive: true, withFileTypes: true }).filter(
      (e) => e.isFile(),
    )) {
      expect(readFileSync(join(f.parentPath, f.name)).includes(Buffer.from(passphrase))).to.equal(
        false,
      );
    }
    p = await startProcess(env);
    expect((await send(p.url, 'GET', '/v1/kv/pp/k', root)).body.value).to.equal(
      'behind a passphrase',
    );
    await p.stop();
  });

  it('refuses a wrong passphrase at start-up with a clear line, never garbage', async () => {
    const { dir, env } = setup();
    const p = await startProcess(env);
    await p.stop();
    writeFileSync(join(dir, 'wrong'), 'incorrect horse battery staple', { mode: 0o600 });
    const run = await runToExit({ ...env, COFFER_MASTER_PASSPHRASE_FILE: join(dir, 'wrong') });
    expect(run.code).to.equal(2);
    expect(run.stderr.trim()).to.equal(
      `coffer: COFFER_MASTER_PASSPHRASE_FILE: the passphrase does not open the keyring stored in the data directory (wrong passphrase?); the store needs local passphrase file ${env.COFFER_MASTER_PASSPHRASE_FILE}`,
    );
    expect(run.stderr).not.to.include('incorrect horse');
  });

  it('refuses a passphrase file readable by others, and a short passphrase', async () => {
    const { dir, env } = setup();
    writeFileSync(join(dir, 'open'), passphrase, { mode: 0o644 });
    const open = await runToExit({ ...env, COFFER_MASTER_PASSPHRASE_FILE: join(dir, 'open') });
    expect(open.code).to.equal(2);
    expect(open.stderr).to.match(/COFFER_MASTER_PASSPHRASE_FILE: .*mode 0644/);
    writeFileSync(join(dir, 'short'), 'too short', { mode: 0o600 });
    const short = await runToExit({ ...env, COFFER_MASTER_PASSPHRASE_FILE: join(dir, 'short') });
    expect(short.code).to.equal(2);
    expect(short.stderr).to.include('at least 12 characters');
  });

  it('says which form of the local key a store needs when the other one is configured', async () => {
    const { dir, env } = setup();
    const p = await startProcess(env);
    await p.stop();
    const { COFFER_MASTER_PASSPHRASE_FILE: _unused, ...keyFileEnv } = env;
    const withKeyFile = await runToExit(keyFileEnv);
    expect(withKeyFile.code).to.equal(2);
    // No key file is made for an existing store; start-up names the key it needs.
    expect(withKeyFile.stderr).to.include(
      `needs its own key, local passphrase file ${env.COFFER_MASTER_PASSPHRASE_FILE}`,
    );
    expect(existsSync(keyFileEnv.COFFER_MASTER_KEY_FILE ?? join(dir, 'nonexistent'))).to.equal(
      false,
    );

    const other = tempDir();
    const q = await startProcess({
      COFFER_DATA_DIR: join(other, 'data'),
      COFFER_MASTER_KEY_FILE: join(other, 'k'),
      COFFER_ROOT_TOKEN: generateToken().value,
      COFFER_WORKERS: '1',
    });
    await q.stop();
    // Both set on a key-file store: the message says what to do (unset the passphrase), not to set what is set.
    const withPassphrase = await runToExit({
      COFFER_DATA_DIR: join(other, 'data'),
      COFFER_MASTER_KEY_FILE: join(other, 'k'),
      COFFER_MASTER_PASSPHRASE_FILE: join(dir, 'pass'),
    });
    expect(withPassphrase.code).to.equal(2);
    expect(withPassphrase.stderr).to.include(
      'wrapped by a master key file, not a passphrase: unset COFFER_MASTER_PASSPHRASE_FILE',
    );
    expect(withPassphrase.stderr).to.not.include('set COFFER_MASTER_KEY_FILE instead');
  });
});
