import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { prepareStore } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { sodiumReady } from '../../src/crypto/aead.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { eventually } from '../support/eventually.js';
import { send } from '../support/http-client.js';
import { killAll, serveSettings, startProcess } from '../support/process.js';
import { seedStore } from '../support/seed.js';

describe('rewrap killed with SIGKILL halfway', function () {
  this.timeout(120_000);

  it('continues where it stopped when started again, and loses nothing', async () => {
    const { root, env } = serveSettings(1);
    const config = loadConfig({ ...env, COFFER_LOG_LEVEL: 'silent' });
    await prepareStore(config, { log: pino({ level: 'silent' }) });
    await sodiumReady();
    const storage = new LmdbBackend({ path: join(config.data_dir, 'lmdb') });
    const { holder } = await KeyringHolder.open(
      storage,
      new LocalKeyProvider(loadOrCreateMasterKey(config.master_key_file).key),
      Date.now(),
    );
    const seeded = await seedStore(storage, holder.current(), 10_000);
    await storage.close();

    let p = await startProcess(env);
    expect(
      (await send(p.url, 'POST', '/v1/sys/keyring/rotate', root)).body.active_version,
    ).to.equal(2);
    expect(
      (await send(p.url, 'POST', '/v1/sys/keyring/rewrap', root, { batch_size: 20 })).status,
    ).to.equal(202);
    try {
      await eventually(
        async () => {
          const progress = (await send(p.url, 'GET', '/v1/sys/keyring/rewrap', root)).body;
          return progress.examined >= progress.total / 3;
        },
        { timeout: 60_000, interval: 10, what: 'a third of the rewrap done' },
      );
    } finally {
      // Kill the supervisor and its worker without any chance to clean up (also when the wait failed).
      await killAll(p);
    }

    p = await startProcess(env);
    try {
      const after = (await send(p.url, 'GET', '/v1/sys/keyring/rewrap', root)).body;
      expect(after.running).to.equal(false);
      expect(after.finished_at).to.equal(null);
      expect(after.examined).to.be.greaterThan(0).and.below(after.total);

      const resumed = (
        await send(p.url, 'POST', '/v1/sys/keyring/rewrap', root, { batch_size: 500 })
      ).body;
      expect(resumed.examined).to.equal(after.examined); // it continues; it does not start over
      let final = resumed;
      await eventually(
        async () => {
          final = (await send(p.url, 'GET', '/v1/sys/keyring/rewrap', root)).body;
          return final.finished_at !== null && !final.running;
        },
        { timeout: 60_000, what: 'the rewrap finished' },
      );
      expect(final.failed).to.equal(0);
      const status = (await send(p.url, 'GET', '/v1/sys/keyring', root)).body;
      expect(status.versions.find((v: { version: number }) => v.version === 1)).to.include({
        secrets: 0,
        configs: 0,
      });
      expect(status.unreadable).to.equal(0);
      for (let i = 0; i < seeded.length; i += 64) {
        const batch = seeded.slice(i, i + 64);
        const reads = await Promise.all(
          batch.map((s) =>
            send(p.url, 'GET', `/v1/kv/${s.namespace}/${s.key}?version=${s.version}`, root),
          ),
        );
        reads.forEach((r, j) => {
          expect(r.body?.value, `${batch[j]!.key}@${batch[j]!.version}`).to.equal(batch[j]!.value);
        });
      }
    } finally {
      await p.stop();
    }
  });
});
