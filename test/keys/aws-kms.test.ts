import { expect } from 'chai';
import type { KeyProviderError } from '../../src/keys/key-provider.js';
import {
  keyProviderStartError,
  startTestCoffer,
  type TestCoffer,
  tamperWrappedKeyring,
  tempDir,
} from '../support/harness.js';
import { TestKms } from '../support/kms-server.js';

describe('aws-kms provider (the real AWS SDK over HTTP to a local KMS-compatible endpoint)', function () {
  this.timeout(60_000);
  const kms = new TestKms();
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

  before(async () => {
    // Placeholder credentials for the SDK's standard chain; the test endpoint only checks a signature is there.
    process.env.AWS_ACCESS_KEY_ID = 'AKIDTESTONLY';
    process.env.AWS_SECRET_ACCESS_KEY = 'test-only-not-a-secret';
    await kms.start();
    kms.addKey('key-a');
    kms.addKey('key-b');
  });
  after(async () => {
    await kms.stop();
    process.env.AWS_ACCESS_KEY_ID = saved.id;
    process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
  });

  const kmsEnv = (keyId: string): Record<string, string> => ({
    COFFER_KEY_PROVIDER: 'aws-kms',
    COFFER_KMS_KEY_ID: keyId,
    COFFER_KMS_REGION: 'eu-west-1',
    COFFER_KMS_ENDPOINT: kms.url,
  });

  const startError = (dir: string, keyId: string, rootToken: string): Promise<KeyProviderError> =>
    keyProviderStartError(dir, kmsEnv(keyId), rootToken);

  it('round-trips with one KMS call per start, binding an encryption context that names the instance', async () => {
    const dir = tempDir();
    kms.calls.length = 0;
    let c: TestCoffer = await startTestCoffer({ dataDir: dir, env: kmsEnv('key-a') });
    expect(kms.calls.map((k) => k.operation)).to.deep.equal(['GenerateDataKey']);
    expect(kms.calls[0]!.context).to.have.keys('purpose', 'instance');
    await c.put('kms/pw', 'sealed under kms');
    for (let i = 0; i < 20; i++) await c.call('GET', '/v1/kv/kms/pw');
    expect(kms.calls).to.have.length(1);
    c = await c.restart();
    expect(kms.calls.map((k) => k.operation)).to.deep.equal(['GenerateDataKey', 'Decrypt']);
    expect(kms.calls[1]!.context).to.deep.equal(kms.calls[0]!.context);
    expect((await c.call('GET', '/v1/kv/kms/pw')).body.value).to.equal('sealed under kms');
    const status = await c.call('GET', '/v1/sys/keyring');
    expect(status.body.provider).to.equal('aws-kms');
    await c.close();
  });

  it('refuses another KMS key, a denied key and a disabled key with a clear start-up error', async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir, env: kmsEnv('key-a') });
    const root = c.rootToken;
    await c.close();
    expect((await startError(dir, 'key-b', root)).message).to.equal(
      'the keyring was wrapped under another KMS key than key-b; the store needs aws-kms key key-a in eu-west-1',
    );
    kms.addKey('key-c');
    const dir2 = tempDir();
    await (await startTestCoffer({ dataDir: dir2, rootToken: root, env: kmsEnv('key-c') })).close();
    kms.deny('key-c');
    const denied = await startError(dir2, 'key-c', root);
    expect(denied.setting).to.equal('COFFER_KMS_KEY_ID');
    expect(denied.message).to.equal('access to KMS key key-c was denied');
    kms.addKey('key-d');
    const dir3 = tempDir();
    await (await startTestCoffer({ dataDir: dir3, rootToken: root, env: kmsEnv('key-d') })).close();
    kms.disable('key-d');
    expect((await startError(dir3, 'key-d', root)).message).to.equal('KMS key key-d is disabled');
  });

  it('retries throttling and starts; gives up with a clear error when throttling persists', async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir, env: kmsEnv('key-a') });
    const root = c.rootToken;
    await c.close();
    kms.failNext('ThrottlingException', 2);
    const again = await startTestCoffer({ dataDir: dir, rootToken: root, env: kmsEnv('key-a') });
    await again.close();
    kms.failNext('ThrottlingException', 50);
    try {
      expect((await startError(dir, 'key-a', root)).message).to.equal(
        'KMS kept throttling the request after retries; try again later',
      );
    } finally {
      kms.failNext('ThrottlingException', 0); // never left for the next test, also when this one fails
    }
  });

  it('detects a tampered wrapped keyring', async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir, env: kmsEnv('key-a') });
    const root = c.rootToken;
    await tamperWrappedKeyring(c.storage, 5);
    await c.close();
    expect((await startError(dir, 'key-a', root)).message).to.match(
      /altered|KMS refused|not wrapped/,
    );
  });
});
