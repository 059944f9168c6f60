import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { parseDuration } from '../../src/operator/auto-rotate.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer } from '../support/harness.js';

describe('automatic rotation (keyring.rotate_after)', function () {
  this.timeout(30_000);

  it('reads durations in seconds, minutes, hours and days, and refuses anything else', () => {
    expect(parseDuration('90d')).to.equal(90 * 86_400_000);
    expect(parseDuration('12h')).to.equal(12 * 3_600_000);
    expect(parseDuration('30m')).to.equal(1_800_000);
    expect(parseDuration('45s')).to.equal(45_000);
    for (const bad of ['90', '0d', '90days', '1.5h', '-1d', 'd'])
      expect(parseDuration(bad), bad).to.equal(undefined);
    expect(() => loadConfig({ COFFER_KEYRING_ROTATE_AFTER: '90days' })).to.throw(
      ConfigError,
      /^COFFER_KEYRING_ROTATE_AFTER: invalid value/,
    );
    expect(loadConfig({ COFFER_KEYRING_ROTATE_AFTER: '90d' }).keyring.rotate_after).to.equal('90d');
  });

  it('rotates a running server once the active version reaches the age, and old values stay readable', async () => {
    const c = await startTestCoffer({ env: { COFFER_KEYRING_ROTATE_AFTER: '2s' } });
    try {
      await c.put('auto/k', 'sealed under version 1');
      expect((await c.call('GET', '/v1/sys/keyring')).body.active_version).to.equal(1);
      let status = (await c.call('GET', '/v1/sys/keyring')).body;
      await eventually(
        async () => {
          status = (await c.call('GET', '/v1/sys/keyring')).body;
          return status.active_version !== 1;
        },
        { timeout: 8000, interval: 200, what: 'a rotation' },
      );
      expect(status.active_version).to.be.at.least(2);
      const [v1, v2] = status.versions as { created_at: string }[];
      expect(Date.parse(v2!.created_at) - Date.parse(v1!.created_at)).to.be.at.least(2000);
      expect((await c.call('GET', '/v1/kv/auto/k')).body.value).to.equal('sealed under version 1');
    } finally {
      await c.close();
    }
  });

  it('rotates once when several processes find the version due at the same moment', async () => {
    const c = await startTestCoffer();
    try {
      const provider = () =>
        new LocalKeyProvider(loadOrCreateMasterKey(c.config.master_key_file).key);
      const holders = await Promise.all(
        [1, 2, 3].map(
          async () => (await KeyringHolder.open(c.storage, provider(), Date.now())).holder,
        ),
      );
      const later = Date.now() + 10_000;
      const results = await Promise.all(holders.map((h) => h.rotateIfOlderThan(5000, later)));
      expect(results.filter((r) => r !== null)).to.deep.equal([2]);
      expect(await holders[0]!.rotateIfOlderThan(5000, later)).to.equal(null);
      expect((await c.call('GET', '/v1/sys/keyring')).body.versions).to.have.length(2);
    } finally {
      await c.close();
    }
  });
});
