import { expect } from 'chai';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { unpackVersion } from '../../src/store/kv-format.js';
import { versionKey } from '../../src/store/layout.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

describe('keyring rotation by another holder of the same store', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c.close();
  });

  async function keyVersionOf(ns: string, key: string, version: number): Promise<number> {
    const record = unpackVersion((await c.storage.get(versionKey(ns, key, version)))!);
    return record!.type === 'secret' ? record!.sealed.keyVersion : record!.seal.keyVersion;
  }

  it('makes the server seal its next write under the new version, and old records stay readable', async () => {
    await c.put('rot/k', 'before', 'secret');
    await c.put('rot/cfg', 'before', 'config');
    expect(await keyVersionOf('rot', 'k', 1)).to.equal(1);

    // Another process (here: another holder on the same storage) rotates.
    const provider = new LocalKeyProvider(loadOrCreateMasterKey(c.config.master_key_file).key);
    const { holder } = await KeyringHolder.open(c.storage, provider, Date.now());
    expect(await holder.rotate(Date.now())).to.equal(2);

    await c.put('rot/k', 'after', 'secret');
    await c.put('rot/cfg', 'after', 'config');
    expect(await keyVersionOf('rot', 'k', 2)).to.equal(2);
    expect(await keyVersionOf('rot', 'cfg', 2)).to.equal(2);
    expect((await c.call('GET', '/v1/kv/rot/k?version=1')).body.value).to.equal('before');
    expect((await c.call('GET', '/v1/kv/rot/k')).body.value).to.equal('after');
    expect((await c.call('GET', '/v1/kv/rot/cfg?version=1')).body.value).to.equal('before');

    // And the other way round: the server's holder is behind again, and reads a record it cannot open yet.
    await holder.rotate(Date.now());
    const sealedBy3 = await c.put('rot/k', 'third', 'secret');
    expect(await keyVersionOf('rot', 'k', sealedBy3.body.version)).to.equal(3);
    expect((await c.call('GET', '/v1/kv/rot/k')).body.value).to.equal('third');
  });
});
