import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { counterKey, metaKey, versionKey } from '../../src/store/layout.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

/** The raw bytes of the LMDB data file, as an attacker with the disk would see them. */
function rawDataFile(c: TestCoffer): Buffer {
  return readFileSync(join(c.config.data_dir, 'lmdb', 'data.mdb'));
}

describe('values at rest', () => {
  let c: TestCoffer;
  beforeEach(async () => {
    c = await startTestCoffer();
  });
  afterEach(async () => {
    await c.close();
  });

  it('a secret value is not in the raw data file; a config value is', async () => {
    const secret = `SECRET-${'q'.repeat(24)}-marker`;
    const config = `CONFIG-${'w'.repeat(24)}-marker`;
    await c.put('rest/pw', secret, 'secret');
    await c.put('rest/url', config, 'config');
    const raw = rawDataFile(c);
    expect(raw.includes(Buffer.from(config))).to.equal(true);
    expect(raw.includes(Buffer.from(secret))).to.equal(false);
    expect(raw.includes(Buffer.from('q'.repeat(24)))).to.equal(false);
    expect(raw.includes(Buffer.from(c.rootToken))).to.equal(false);
    expect((await c.call('GET', '/v1/kv/rest/pw')).body.value).to.equal(secret);
  });

  it('no token value is in the raw data file', async () => {
    const token = await c.token({ role: 'reader' });
    const raw = rawDataFile(c);
    expect(raw.includes(Buffer.from(token))).to.equal(false);
    expect(raw.includes(Buffer.from(token.slice(21)))).to.equal(false);
  });

  it('a sealed value copied to another key, or to another version, fails to open: 500 integrity_error', async () => {
    await c.put('src/a', 'value-a', 'secret');
    await c.put('dst/b', 'value-b', 'secret');
    await c.put('dst/b', 'value-b2', 'secret');
    const storage = c.storage;
    const sealed = await storage.get(versionKey('src', 'a', 1));
    const v1 = await storage.get(versionKey('dst', 'b', 1));
    // An attacker with write access to storage moves ciphertext around.
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key: versionKey('dst', 'b', 2), value: sealed! }],
      result: undefined,
    }));
    const moved = await c.call('GET', '/v1/kv/dst/b');
    expect(moved.status).to.equal(500);
    expect(moved.body.code).to.equal('integrity_error');
    expect(moved.text).to.not.include('value-a');
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key: versionKey('dst', 'b', 2), value: v1! }],
      result: undefined,
    }));
    expect((await c.call('GET', '/v1/kv/dst/b?version=2')).body.code).to.equal('integrity_error');
    expect((await c.call('GET', '/v1/kv/dst/b?version=1')).body.value).to.equal('value-b');
  });

  it('an edited config value, or a record whose type was flipped, is detected', async () => {
    await c.put('cfg/url', 'https://good.example', 'config');
    const storage = c.storage;
    const key = versionKey('cfg', 'url', 1);
    const original = Buffer.from((await storage.get(key))!);
    const edited = Buffer.from(original.toString('latin1').replace('good', 'evil'), 'latin1');
    expect(edited.equals(original)).to.equal(false);
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key, value: edited }],
      result: undefined,
    }));
    const res = await c.call('GET', '/v1/kv/cfg/url');
    expect(res.status).to.equal(500);
    expect(res.body.code).to.equal('integrity_error');
    expect(res.text).to.not.include('evil');

    await c.put('flip/pw', 'hidden', 'secret');
    const flipKey = versionKey('flip', 'pw', 1);
    const sealed = Buffer.from((await storage.get(flipKey))!).toString('latin1');
    const flipped = Buffer.from(sealed.replace('secret', 'config'), 'latin1');
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key: flipKey, value: flipped }],
      result: undefined,
    }));
    expect((await c.call('GET', '/v1/kv/flip/pw')).body.code).to.equal('integrity_error');
  });

  it('keeps the version counter apart from the key, so a delete does not reset it', async () => {
    await c.put('cnt/k', 'a', 'config');
    await c.call('DELETE', '/v1/kv/cnt/k');
    expect(await c.storage.get(metaKey('cnt', 'k'))).to.equal(undefined);
    expect(await c.storage.get(counterKey('cnt', 'k'))).to.not.equal(undefined);
  });
});
