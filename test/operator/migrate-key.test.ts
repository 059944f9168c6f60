import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { generateToken } from '../../src/auth/token-format.js';
import { KEYRING_KEY } from '../../src/store/keyring-store.js';
import {
  keyProviderStartError,
  startTestCoffer,
  type TestCoffer,
  tempDir,
} from '../support/harness.js';
import { send } from '../support/http-client.js';
import { TestKms } from '../support/kms-server.js';
import { startProcess, workerPids } from '../support/process.js';
import { HSM_KEYS, type SoftHsm, softHsm } from '../support/softhsm.js';

describe('migrate-key: the keyring moves to another master key in one atomic write', function () {
  this.timeout(120_000);
  const kms = new TestKms();
  let hsm: SoftHsm;
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  // Placeholder credentials for the SDK's standard chain; the test endpoint only checks a signature is there.
  const awsEnv = {
    AWS_ACCESS_KEY_ID: 'AKIDTESTONLY',
    AWS_SECRET_ACCESS_KEY: 'test-only-not-a-secret',
  };

  before(async function () {
    hsm = softHsm(this);
    Object.assign(process.env, awsEnv);
    await kms.start();
    kms.addKey('migrate-target');
    kms.addKey('denied-target');
    kms.deny('denied-target');
  });
  after(async () => {
    await kms.stop();
    for (const [name, value] of [
      ['AWS_ACCESS_KEY_ID', saved.id],
      ['AWS_SECRET_ACCESS_KEY', saved.secret],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  const kmsEnv = (): Record<string, string> => ({
    COFFER_KEY_PROVIDER: 'aws-kms',
    COFFER_KMS_KEY_ID: 'migrate-target',
    COFFER_KMS_REGION: 'eu-west-1',
    COFFER_KMS_ENDPOINT: kms.url,
  });
  const kmsTarget = () => ({
    key_provider: 'aws-kms',
    kms: { key_id: 'migrate-target', region: 'eu-west-1', endpoint: kms.url },
  });
  const hsmTarget = () => ({
    key_provider: 'pkcs11',
    pkcs11: { library: hsm.library, token_label: hsm.tokenLabel, key_label: HSM_KEYS.main },
  });

  /** 120 keys, every third with three versions, every fifth version a config value. */
  async function seed(c: TestCoffer): Promise<Map<string, string>> {
    const written = new Map<string, string>();
    for (let i = 0; i < 120; i++) {
      for (let v = 1; v <= (i % 3 === 0 ? 3 : 1); v++) {
        const value = `migrated value ${i}.${v} ✓`;
        const res = await c.put(
          `mig/ns${i % 7}/k${i}`,
          value,
          (i + v) % 5 === 0 ? 'config' : 'secret',
        );
        expect(res.status).to.equal(v === 1 ? 201 : 200);
        written.set(`mig/ns${i % 7}/k${i}?version=${res.body.version}`, value);
      }
    }
    return written;
  }

  async function readAll(c: TestCoffer, written: Map<string, string>): Promise<void> {
    const entries = [...written];
    for (let i = 0; i < entries.length; i += 50) {
      const batch = entries.slice(i, i + 50);
      const reads = await Promise.all(batch.map(([path]) => c.call('GET', `/v1/kv/${path}`)));
      reads.forEach((r, j) => {
        expect(r.body?.value, batch[j]![0]).to.equal(batch[j]![1]);
      });
    }
  }

  it('local → aws-kms → pkcs11, every value read back after each step and after each restart; the old key is refused by name', async () => {
    const dir = tempDir();
    const localEnv = {};
    let c = await startTestCoffer({ dataDir: dir, env: localEnv });
    const root = c.rootToken;
    const written = await seed(c);
    const recordBytes = async (): Promise<number> => (await c.storage.get(KEYRING_KEY))!.length;
    const before = await recordBytes();

    const toKms = await c.call('POST', '/v1/sys/keyring/migrate', { json: kmsTarget() });
    expect(toKms.status, toKms.text).to.equal(200);
    expect(toKms.body).to.include({
      from: `local master key file ${join(dir, 'keys', 'master.key')}`,
      to: 'aws-kms key migrate-target in eu-west-1',
      provider: 'aws-kms',
    });
    // O(1): one record changed, whatever the number of secrets.
    expect(await recordBytes()).to.be.below(before + 400);
    await readAll(c, written);
    await c.close();

    const stale = await keyProviderStartError(dir, localEnv, root);
    expect(stale.message).to.match(
      /wrapped by the "aws-kms" provider, not "local"; the store needs aws-kms key migrate-target in eu-west-1 \(migrate-key at \d{4}-/,
    );
    c = await startTestCoffer({ dataDir: dir, rootToken: root, env: kmsEnv() });
    await readAll(c, written);
    const status = (await c.call('GET', '/v1/sys/keyring')).body;
    expect(status).to.include({
      provider: 'aws-kms',
      wrapped_by: 'aws-kms key migrate-target in eu-west-1',
      migrations: 1,
    });

    // A write and a rotation after the migration stay under the new key.
    expect((await c.put('mig/after/kms', 'written after the first migration')).status).to.equal(
      201,
    );
    written.set('mig/after/kms?version=1', 'written after the first migration');
    expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);

    const pinFile = join(dir, 'hsm.pin');
    writeFileSync(pinFile, hsm.pin, { mode: 0o600 });
    const toHsm = await c.call('POST', '/v1/sys/keyring/migrate', {
      json: { ...hsmTarget(), pkcs11: { ...hsmTarget().pkcs11, pin_file: pinFile } },
    });
    expect(toHsm.status, toHsm.text).to.equal(200);
    expect(toHsm.body.to).to.equal(`pkcs11 key "${HSM_KEYS.main}" in token "${hsm.tokenLabel}"`);
    await readAll(c, written);
    await c.close();

    const staleKms = await keyProviderStartError(dir, kmsEnv(), root);
    expect(staleKms.message).to.include(`the store needs pkcs11 key "${HSM_KEYS.main}"`);
    c = await startTestCoffer({ dataDir: dir, rootToken: root, env: hsm.env(HSM_KEYS.main) });
    await readAll(c, written);
    expect((await c.call('GET', '/v1/sys/keyring')).body).to.include({
      provider: 'pkcs11',
      migrations: 2,
    });
    await c.close();
  });

  it('refuses a target it cannot use, and a malformed one, leaving the store on its key', async () => {
    const c = await startTestCoffer();
    await c.put('mig/kept', 'still under the local key');
    const refused = async (json: unknown, pattern: RegExp) => {
      const res = await c.call('POST', '/v1/sys/keyring/migrate', { json });
      expect(res.status, res.text).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/application\/problem\+json/);
      expect(res.body.detail).to.match(pattern);
      return res.body;
    };
    await refused(
      {
        key_provider: 'aws-kms',
        kms: { key_id: 'denied-target', region: 'eu-west-1', endpoint: kms.url },
      },
      /the new master key cannot be used: access to KMS key denied-target was denied/,
    );
    await refused(
      {
        ...hsmTarget(),
        pkcs11: { ...hsmTarget().pkcs11, key_label: HSM_KEYS.other, pin_file: '/nonexistent/pin' },
      },
      /cannot be used: cannot open \/nonexistent\/pin/,
    );
    await refused(
      { ...hsmTarget() },
      /needs exactly one of a PIN file \(pkcs11.pin_file\) and COFFER_PKCS11_PIN/,
    );
    await refused(
      { key_provider: 'local', master_key_file: 'relative/key' },
      /master_key_file must match pattern/,
    );
    await refused(
      { key_provider: 'local' },
      /the local provider needs a key file or a passphrase file/,
    );
    await refused(
      { key_provider: 'local', master_key_file: '/tmp/x.key', master_passphrase_file: '/tmp/p' },
      /takes one of master_key_file and master_passphrase_file, not both/,
    );
    const stray = await refused(
      { key_provider: 'local', master_key_file: '/tmp/x.key', kms: { key_id: 'k' } },
      /kms does not apply to the local provider/,
    );
    expect(stray.errors).to.deep.equal([
      { field: '/kms', in: 'body', message: 'does not apply to local' },
    ]);
    await refused(
      {
        key_provider: 'pkcs11',
        pkcs11: { library: hsm.library, key_label: 'k', slot: 1, token_label: 't', pin_file: '/p' },
      },
      /exactly one of a slot id \(pkcs11.slot\) and a token label \(pkcs11.token_label\)/,
    );
    await refused({ key_provider: 'vault' }, /key_provider must be one of: "local", /);

    const admin = await c.token({ role: 'admin' });
    expect(
      (await c.call('POST', '/v1/sys/keyring/migrate', { token: admin, json: kmsTarget() })).status,
    ).to.equal(403);
    expect((await c.call('GET', '/v1/sys/keyring')).body).to.include({
      provider: 'local',
      migrations: 0,
    });
    const again = await c.restart();
    expect((await again.call('GET', '/v1/kv/mig/kept')).body.value).to.equal(
      'still under the local key',
    );
    await again.close();
  });

  it('every worker follows a migration: rotations after it wrap under the new key on any process', async () => {
    const dir = tempDir();
    const root = generateToken().value;
    const base = {
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
      COFFER_ROOT_TOKEN: root,
      COFFER_WORKERS: '2',
      COFFER_PKCS11_PIN: hsm.pin,
      SOFTHSM2_CONF: hsm.conf,
    };
    const p = await startProcess(base);
    try {
      expect(
        (
          await send(p.url, 'PUT', '/v1/kv/mig/workers', root, {
            value: 'across workers',
            type: 'secret',
          })
        ).status,
      ).to.equal(201);
      const res = await send(p.url, 'POST', '/v1/sys/keyring/migrate', root, hsmTarget());
      expect(res.status).to.equal(200);
      // Rotations land on both workers (each request may reach either); each must wrap under the HSM key.
      for (let i = 0; i < 6; i++)
        expect((await send(p.url, 'POST', '/v1/sys/keyring/rotate', root)).status).to.equal(200);
      expect(
        (
          await send(p.url, 'PUT', '/v1/kv/mig/workers', root, {
            value: 'after rotations',
            type: 'secret',
          })
        ).status,
      ).to.equal(200);
    } finally {
      await p.stop();
    }
    const c = await startTestCoffer({ dataDir: dir, rootToken: root, env: hsm.env(HSM_KEYS.main) });
    expect((await c.call('GET', '/v1/kv/mig/workers?version=1')).body.value).to.equal(
      'across workers',
    );
    expect((await c.call('GET', '/v1/kv/mig/workers')).body.value).to.equal('after rotations');
    expect((await c.call('GET', '/v1/sys/keyring')).body.active_version).to.equal(7);
    await c.close();
  });

  it('a migration killed with SIGKILL at any moment leaves the store openable by exactly one of the two keys, and start-up names it', async () => {
    // 'answered': killed right after the 200, which must mean the migration is durable.
    const delays = [0, 100, 250, 'answered'] as const;
    const outcomes: string[] = [];
    for (const delay of delays) {
      const dir = tempDir();
      const root = generateToken().value;
      const passphraseFile = join(dir, 'passphrase');
      writeFileSync(passphraseFile, 'a long test-only passphrase for migration', { mode: 0o600 });
      const oldEnv = {
        COFFER_DATA_DIR: join(dir, 'data'),
        COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
        COFFER_ROOT_TOKEN: root,
        COFFER_WORKERS: '1',
      };
      const newEnv = { ...oldEnv, COFFER_MASTER_PASSPHRASE_FILE: passphraseFile };
      const p = await startProcess(oldEnv);
      expect(
        (
          await send(p.url, 'PUT', '/v1/kv/mig/crash', root, {
            value: 'survives the crash',
            type: 'secret',
          })
        ).status,
      ).to.equal(201);
      // argon2id makes the migration take a few hundred milliseconds: the kill lands before, during or after it.
      const migration = send(p.url, 'POST', '/v1/sys/keyring/migrate', root, {
        key_provider: 'local',
        master_passphrase_file: passphraseFile,
      }).catch(() => undefined);
      if (delay === 'answered') expect((await migration)?.status).to.equal(200);
      else await new Promise((r) => setTimeout(r, delay));
      for (const pid of [p.child.pid!, ...workerPids(p.child.pid!)]) process.kill(pid, 'SIGKILL');
      await Promise.all([migration, new Promise((r) => p.child.once('exit', r))]);

      const withOld = await runToExitOrStop(oldEnv);
      const withNew = await runToExitOrStop(newEnv);
      expect([withOld.started, withNew.started].filter(Boolean), `delay ${delay}`).to.have.length(
        1,
      );
      const refused = withOld.started ? withNew : withOld;
      expect(refused.stderr).to.match(
        withOld.started
          ? /the store needs local master key file/
          : /the store needs local passphrase file/,
      );
      const opened = await startTestCoffer({
        dataDir: dir,
        rootToken: root,
        env: withOld.started ? {} : { COFFER_MASTER_PASSPHRASE_FILE: passphraseFile },
      });
      expect((await opened.call('GET', '/v1/kv/mig/crash')).body.value).to.equal(
        'survives the crash',
      );
      await opened.close();
      outcomes.push(withOld.started ? 'old' : 'new');
    }
    // The first kill lands before the migration committed; the last after it was answered.
    expect(outcomes[0]).to.equal('old');
    expect(outcomes.at(-1)).to.equal('new');
  });
});

/** Starts coffer with `env`; reports whether it came up (and stops it) or what it said when it refused. */
async function runToExitOrStop(
  env: Record<string, string>,
): Promise<{ started: boolean; stderr: string }> {
  try {
    const p = await startProcess(env);
    await p.stop();
    return { started: true, stderr: '' };
  } catch (err) {
    return { started: false, stderr: (err as Error).message };
  }
}
