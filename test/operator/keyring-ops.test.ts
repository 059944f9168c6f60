import { expect } from 'chai';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { type SeededVersion, seedStore } from '../support/seed.js';

async function waitForRewrap(c: TestCoffer): Promise<Record<string, unknown>> {
  let status: Record<string, unknown> = {};
  await eventually(
    async () => {
      status = (await c.call('GET', '/v1/sys/keyring/rewrap')).body;
      return status.finished_at !== null && !status.running;
    },
    { timeout: 60_000, interval: 50, what: 'the rewrap finished' },
  );
  return status;
}

async function expectAllReadBack(c: TestCoffer, seeded: readonly SeededVersion[]): Promise<void> {
  for (let i = 0; i < seeded.length; i += 64) {
    const batch = seeded.slice(i, i + 64);
    const reads = await Promise.all(
      batch.map((s) => c.call('GET', `/v1/kv/${s.namespace}/${s.key}?version=${s.version}`)),
    );
    reads.forEach((r, j) => {
      expect(r.status, `${batch[j]!.namespace}/${batch[j]!.key}@${batch[j]!.version}`).to.equal(
        200,
      );
      expect(r.body.value).to.equal(batch[j]!.value);
      expect(r.body.type).to.equal(batch[j]!.type);
    });
  }
}

describe('keyring operations (/v1/sys/keyring)', function () {
  this.timeout(120_000);
  let c: TestCoffer;
  let seeded: SeededVersion[];

  before(async () => {
    c = await startTestCoffer();
    seeded = await seedStore(c.storage, c.app.keyring.current(), 10_000);
  });
  after(async () => {
    await c.close();
  });

  it('reports the provider, the versions and what each one wraps', async () => {
    const res = await c.call('GET', '/v1/sys/keyring');
    expect(res.status).to.equal(200);
    const secrets = seeded.filter((s) => s.type === 'secret').length;
    expect(res.body).to.deep.include({ provider: 'local', active_version: 1, unreadable: 0 });
    expect(res.body.versions).to.have.length(1);
    expect(res.body.versions[0]).to.deep.include({
      version: 1,
      active: true,
      secrets,
      configs: seeded.length - secrets,
    });
  });

  it('is for the root token only', async () => {
    const admin = await c.token({ role: 'admin' });
    for (const [method, path] of [
      ['GET', '/v1/sys/keyring'],
      ['POST', '/v1/sys/keyring/rotate'],
      ['POST', '/v1/sys/keyring/rewrap'],
      ['GET', '/v1/sys/keyring/rewrap'],
      ['POST', '/v1/sys/keyring/retire'],
    ] as const) {
      expect((await c.call(method, path, { token: admin })).status, path).to.equal(403);
    }
  });

  it('rotates, rewraps 10,000+ records while reads and writes go on, then retires the old version; every version reads back', async () => {
    const rotated = await c.call('POST', '/v1/sys/keyring/rotate');
    expect(rotated.body).to.deep.equal({ previous_version: 1, active_version: 2 });
    const written = await c.put('during/before', 'sealed under 2');
    expect(written.status).to.equal(201);

    const started = await c.call('POST', '/v1/sys/keyring/rewrap', { json: { batch_size: 200 } });
    expect(started.status).to.equal(202);
    expect(started.body).to.include({ running: true, target_version: 2 });
    expect(started.body.total).to.be.at.least(seeded.length);

    // Reads and writes while the rewrap runs: every one succeeds.
    const during: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 300; i++) {
      const s = seeded[(i * 37) % seeded.length]!;
      during.push(
        c.call('GET', `/v1/kv/${s.namespace}/${s.key}?version=${s.version}`).then((r) => {
          expect(r.body.value).to.equal(s.value);
          return r;
        }),
      );
      if (i % 3 === 0) during.push(c.put(`during/k${i}`, `v${i}`));
    }
    expect((await Promise.all(during)).every((r) => r.status === 200 || r.status === 201)).to.equal(
      true,
    );

    const done = await waitForRewrap(c);
    expect(done.failed).to.equal(0);
    expect(done.examined).to.be.at.least(seeded.length);
    const status = await c.call('GET', '/v1/sys/keyring');
    const v1 = status.body.versions.find((v: { version: number }) => v.version === 1);
    expect(v1).to.include({ secrets: 0, configs: 0, active: false });

    const retired = await c.call('POST', '/v1/sys/keyring/retire');
    expect(retired.body).to.deep.equal({ retired: [1], versions: [2] });
    await expectAllReadBack(c, seeded);
    expect((await c.call('GET', '/v1/kv/during/before')).body.value).to.equal('sealed under 2');
    expect(
      (await c.call('GET', '/v1/sys/keyring')).body.versions.map(
        (v: { version: number }) => v.version,
      ),
    ).to.deep.equal([2]);
  });

  it('does not retire a version that still wraps records', async () => {
    await c.call('POST', '/v1/sys/keyring/rotate');
    const retired = await c.call('POST', '/v1/sys/keyring/retire');
    expect(retired.body).to.deep.equal({ retired: [], versions: [2, 3] });
  });

  it('refuses unknown fields in the rewrap body', async () => {
    const res = await c.call('POST', '/v1/sys/keyring/rewrap', { json: { batch: 5 } });
    expect(res.status).to.equal(400);
    await waitForRewrap(c).catch(() => undefined);
  });
});
