import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { generateToken } from '../../src/auth/token-format.js';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KEYRING_KEY } from '../../src/store/keyring-store.js';
import { GENERATION_KEY } from '../../src/store/layout.js';
import {
  keyProviderStartError,
  startTestCoffer,
  tamperWrappedKeyring,
  tempDir,
} from '../support/harness.js';
import { HSM_KEYS, type SoftHsm, softHsm } from '../support/softhsm.js';

describe('pkcs11 provider (SoftHSM2 through pkcs11js)', function () {
  this.timeout(60_000);
  let hsm: SoftHsm;

  before(function () {
    hsm = softHsm(this);
  });

  const startError = keyProviderStartError;

  it('round-trips: the HSM wraps the keyring (AES-GCM inside the token) and opens it after a restart', async () => {
    const dir = tempDir();
    let c = await startTestCoffer({ dataDir: dir, env: hsm.env(HSM_KEYS.main) });
    await c.put('hsm/pw', 'sealed under the hsm');
    const stored = Buffer.from((await c.storage.get(KEYRING_KEY))!);
    c = await c.restart();
    expect((await c.call('GET', '/v1/kv/hsm/pw')).body.value).to.equal('sealed under the hsm');
    expect((await c.call('GET', '/v1/sys/keyring')).body.provider).to.equal('pkcs11');
    // A rotation wraps the keyring again inside the HSM, under a fresh IV.
    expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
    expect(Buffer.from((await c.storage.get(KEYRING_KEY))!).equals(stored)).to.equal(false);
    c = await c.restart();
    expect((await c.call('GET', '/v1/kv/hsm/pw')).body.value).to.equal('sealed under the hsm');
    await c.close();
  });

  it("keeps the high-water marks in the token too: a keyring put back, with the data directory's marks deleted, is still refused", async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir, env: hsm.env(HSM_KEYS.main) });
    const older = await Promise.all(
      [KEYRING_KEY, GENERATION_KEY].map(
        async (k) => [k, Buffer.from((await c.storage.get(k))!)] as const,
      ),
    );
    expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
    await c.close();
    // The attacker who writes the data directory: the keyring from before the rotation, and the host's
    // memory of the newer one deleted.
    const storage = new LmdbBackend({ path: join(c.config.data_dir, 'lmdb') });
    await storage.atomic([], () => ({
      writes: older.map(([key, value]) => ({ op: 'put' as const, key, value })),
      result: undefined,
    }));
    await storage.close();
    rmSync(join(c.config.data_dir, 'high-water'), { recursive: true, force: true });
    const refused = await startTestCoffer({
      dataDir: dir,
      rootToken: c.rootToken,
      env: hsm.env(HSM_KEYS.main),
    }).then(
      (started) => started.close().then(() => null),
      (err: Error) => err,
    );
    expect(refused?.message).to.match(
      /older than one already seen|older than .* one this host has seen/,
    );
  });

  it('takes the PIN from an owner-only file, and the token by slot id as well as by label', async () => {
    const dir = tempDir();
    const pinFile = join(dir, 'pin');
    writeFileSync(pinFile, `${hsm.pin}\n`, { mode: 0o600 });
    const {
      COFFER_PKCS11_PIN: _pin,
      COFFER_PKCS11_TOKEN_LABEL: _label,
      ...base
    } = hsm.env(HSM_KEYS.main);
    const env = {
      ...base,
      COFFER_PKCS11_PIN_FILE: pinFile,
      COFFER_PKCS11_TOKEN_LABEL: hsm.tokenLabel,
    };
    let c = await startTestCoffer({ dataDir: dir, env });
    await c.put('hsm/file', 'pin from a file');
    const root = c.rootToken;
    await c.close();
    c = await startTestCoffer({
      dataDir: dir,
      rootToken: root,
      env: { ...base, COFFER_PKCS11_PIN_FILE: pinFile, COFFER_PKCS11_SLOT: String(hsm.slot) },
    });
    expect((await c.call('GET', '/v1/kv/hsm/file')).body.value).to.equal('pin from a file');
    await c.close();
    chmodSync(pinFile, 0o644);
    const loose = await startError(dir, env, root);
    expect(loose.setting).to.equal('COFFER_PKCS11_PIN_FILE');
    expect(loose.message).to.match(/accessible by group or others/);
  });

  it('refuses a wrong PIN, a missing key, another key and an absent token with clear start-up errors', async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir, env: hsm.env(HSM_KEYS.main) });
    const root = c.rootToken;
    await c.close();

    const wrongPin = await startError(
      dir,
      { ...hsm.env(HSM_KEYS.main), COFFER_PKCS11_PIN: 'not-the-pin' },
      root,
    );
    expect(wrongPin.setting).to.equal('COFFER_PKCS11_PIN');
    expect(wrongPin.message).to.equal('the HSM refused the PIN (incorrect)');
    expect(wrongPin.message + wrongPin.stack).not.to.include('not-the-pin');

    expect((await startError(dir, hsm.env('no-such-key'), root)).message).to.equal(
      'the token holds no AES key labelled "no-such-key"',
    );
    const other = await startError(dir, hsm.env(HSM_KEYS.other), root);
    expect(other.setting).to.equal('COFFER_PKCS11_KEY_LABEL');
    expect(other.message).to.match(/does not open the keyring/);
    expect(
      (
        await startError(
          dir,
          { ...hsm.env(HSM_KEYS.main), COFFER_PKCS11_TOKEN_LABEL: 'absent' },
          root,
        )
      ).message,
    ).to.equal('no token labelled "absent" is present');
    expect(
      (
        await startError(
          dir,
          { ...hsm.env(HSM_KEYS.main), COFFER_PKCS11_LIBRARY: '/nonexistent/libpkcs11.so' },
          root,
        )
      ).setting,
    ).to.equal('COFFER_PKCS11_LIBRARY');
  });

  it('checks its settings before start-up: a module, exactly one of slot and token label, a key label, exactly one PIN source', () => {
    const env = { ...hsm.env(HSM_KEYS.main), COFFER_ROOT_TOKEN: generateToken().value };
    const refusal = (overrides: Record<string, string | undefined>): string => {
      try {
        loadConfig({ ...env, ...overrides });
      } catch (err) {
        expect(err).to.be.instanceOf(ConfigError);
        return (err as ConfigError).message;
      }
      throw new Error('the configuration was accepted');
    };
    expect(loadConfig(env).pkcs11.key_label).to.equal(HSM_KEYS.main);
    expect(refusal({ COFFER_PKCS11_LIBRARY: undefined })).to.match(/^COFFER_PKCS11_LIBRARY: /);
    expect(refusal({ COFFER_PKCS11_SLOT: '0' })).to.match(
      /^COFFER_PKCS11_TOKEN_LABEL: .*exactly one of a slot id/,
    );
    expect(refusal({ COFFER_PKCS11_TOKEN_LABEL: undefined })).to.match(/exactly one of a slot id/);
    expect(refusal({ COFFER_PKCS11_KEY_LABEL: undefined })).to.match(/^COFFER_PKCS11_KEY_LABEL: /);
    expect(refusal({ COFFER_PKCS11_PIN: undefined })).to.match(
      /^COFFER_PKCS11_PIN_FILE: .*exactly one of a PIN file/,
    );
    expect(refusal({ COFFER_PKCS11_PIN_FILE: '/somewhere/pin' })).to.match(
      /exactly one of a PIN file/,
    );
    expect(refusal({ COFFER_PKCS11_SLOT: 'one' })).to.equal(
      'COFFER_PKCS11_SLOT: must be a whole number, got "one"',
    );
  });

  it('detects a tampered wrapped keyring', async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir, env: hsm.env(HSM_KEYS.main) });
    const root = c.rootToken;
    await tamperWrappedKeyring(c.storage, 3);
    await c.close();
    expect((await startError(dir, hsm.env(HSM_KEYS.main), root)).message).to.match(
      /does not open the keyring/,
    );
  });

  it('warns at start-up when the HSM would let the key out (extractable or not sensitive)', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const c = await startTestCoffer({
      env: hsm.env(HSM_KEYS.extractable),
      start: { log: pino({ level: 'warn' }, sink) },
    });
    await c.close();
    expect(lines.join('')).to.include(
      `PKCS#11 key \\"${HSM_KEYS.extractable}\\" is extractable or not sensitive`,
    );
    expect(lines.join('')).not.to.include(hsm.pin);
  });
});
