import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { generateToken } from '../../src/auth/token-format.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { COLLECTOR_FLAGS } from '../../src/server/collector-flags.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { unpackVersion } from '../../src/store/kv-format.js';
import { versionKey } from '../../src/store/layout.js';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { type CofferProcess, startProcess, workerPids } from '../support/process.js';

describe('several worker processes', function () {
  this.timeout(60_000);
  let dir: string;
  let root: string;
  let p: CofferProcess;
  let env: Record<string, string>;

  before(async () => {
    dir = tempDir();
    root = generateToken().value;
    env = {
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'master.key'),
      COFFER_ROOT_TOKEN: root,
      COFFER_WORKERS: '2',
      COFFER_AUTH_FAILURE_BURST: '1000',
    };
    p = await startProcess(env);
    expect(workerPids(p.child.pid!)).to.have.length(2);
  });
  after(async () => {
    if (p.child.exitCode === null) await p.stop();
  });

  it("runs every worker with the collector's flags (pretenuring off: docs/performance.md)", () => {
    for (const pid of workerPids(p.child.pid!)) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      for (const flag of COLLECTOR_FLAGS) expect(argv).to.include(flag);
    }
  });

  it('assigns 60 concurrent PUTs to one key, spread over the workers, the versions 1..60', async () => {
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        send(p.url, 'PUT', '/v1/kv/multi/k', root, { value: `v${i}`, type: 'secret' }),
      ),
    );
    expect(replies.every((r) => r.status === 200 || r.status === 201)).to.equal(true);
    expect(replies.map((r) => r.body.version as number).sort((a, b) => a - b)).to.deep.equal(
      Array.from({ length: 60 }, (_, i) => i + 1),
    );
    for (const [i, r] of replies.entries()) {
      if (i % 10 === 0)
        expect(
          (await send(p.url, 'GET', `/v1/kv/multi/k?version=${r.body.version}`, root)).body.value,
        ).to.equal(`v${i}`);
    }
  });

  it('refuses a revoked token on the very next request to any worker', async () => {
    const token = (await send(p.url, 'POST', '/v1/auth/token', root, { role: 'reader' })).body
      .token as string;
    // Warm both workers' verified-token caches (each request is a new connection; connections alternate).
    for (let i = 0; i < 6; i++)
      expect((await send(p.url, 'GET', '/v1/auth/me', token)).status).to.equal(200);
    expect((await send(p.url, 'DELETE', `/v1/auth/token/${token}`, root)).status).to.equal(204);
    const after = await Promise.all(
      Array.from({ length: 10 }, () => send(p.url, 'GET', '/v1/auth/me', token)),
    );
    expect(after.map((r) => r.status)).to.deep.equal(Array(10).fill(401));
  });

  it('enforces a role changed at runtime on every worker within a second', async () => {
    const rules = (namespaces: string[]) => ({
      rules: [{ namespaces, actions: ['read', 'list'], types: ['config', 'secret'] }],
    });
    await send(p.url, 'PUT', '/v1/kv/team/k', root, { value: 'v', type: 'secret' });
    expect((await send(p.url, 'PUT', '/v1/sys/roles/team', root, rules(['team']))).status).to.equal(
      201,
    );
    const token = (await send(p.url, 'POST', '/v1/auth/token', root, { role: 'team' })).body
      .token as string;
    await eventually(async () => {
      const reads = await Promise.all(
        Array.from({ length: 6 }, () => send(p.url, 'GET', '/v1/kv/team/k', token)),
      );
      return reads.every((r) => r.status === 200);
    });
    expect(
      (await send(p.url, 'PUT', '/v1/sys/roles/team', root, rules(['elsewhere']))).status,
    ).to.equal(200);
    const took = await eventually(
      async () => {
        const reads = await Promise.all(
          Array.from({ length: 6 }, () => send(p.url, 'GET', '/v1/kv/team/k', token)),
        );
        return reads.every((r) => r.status === 403);
      },
      { timeout: 3000, interval: 10, what: 'every worker enforcing the changed role' },
    );
    expect(took).to.be.lessThan(1000);
  });

  it('seals every new write under a keyring version rotated by another process', async () => {
    await send(p.url, 'PUT', '/v1/kv/rot/before', root, { value: 'old', type: 'secret' });
    // Another process sharing the LMDB environment rotates the keyring.
    const storage = new LmdbBackend({ path: join(dir, 'data', 'lmdb') });
    try {
      const { holder } = await KeyringHolder.open(
        storage,
        new LocalKeyProvider(loadOrCreateMasterKey(env.COFFER_MASTER_KEY_FILE!).key),
        Date.now(),
      );
      const active = await holder.rotate(Date.now());
      const writes = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          send(p.url, 'PUT', `/v1/kv/rot/after${i}`, root, { value: `new${i}`, type: 'secret' }),
        ),
      );
      expect(writes.every((w) => w.status === 201)).to.equal(true);
      for (let i = 0; i < 10; i++) {
        const record = unpackVersion((await storage.get(versionKey('rot', `after${i}`, 1)))!);
        expect(record?.type === 'secret' && record.sealed.keyVersion).to.equal(active);
      }
      for (let i = 0; i < 4; i++)
        expect((await send(p.url, 'GET', '/v1/kv/rot/before', root)).body.value).to.equal('old');
    } finally {
      await storage.close();
    }
  });

  it('loses no acknowledged write when a worker is killed mid-load, and replaces the worker', async () => {
    const [victim] = workerPids(p.child.pid!);
    const acknowledged: { key: string; value: string }[] = [];
    let n = 0;
    const deadline = Date.now() + 2000;
    const client = async (): Promise<void> => {
      while (Date.now() < deadline) {
        const key = `k${n++}`;
        const value = `value-${key}`;
        try {
          const r = await send(p.url, 'PUT', `/v1/kv/crash/${key}`, root, {
            value,
            type: 'secret',
          });
          if (r.status === 201) acknowledged.push({ key, value }); // any other answer acknowledges nothing
        } catch {
          // the connection died with the worker: not acknowledged
        }
      }
    };
    const load = Promise.all(Array.from({ length: 16 }, client));
    await eventually(() => acknowledged.length >= 50, {
      timeout: 20_000,
      what: 'writes under way',
    });
    process.kill(victim!, 'SIGKILL');
    await load;
    expect(acknowledged.length).to.be.greaterThan(100);

    await eventually(
      () => workerPids(p.child.pid!).length === 2 && !workerPids(p.child.pid!).includes(victim!),
      { timeout: 15_000, what: 'a replacement worker' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; ${supervisorState(p)}`);
    });
    expect(p.stdout()).to.include('worker exited; starting a replacement');
    // Read every acknowledged write back, 16 at a time.
    for (let i = 0; i < acknowledged.length; i += 16) {
      const batch = acknowledged.slice(i, i + 16);
      const reads = await Promise.all(
        batch.map(({ key }) => send(p.url, 'GET', `/v1/kv/crash/${key}`, root)),
      );
      reads.forEach((r, j) => {
        expect(r.status, batch[j]!.key).to.equal(200);
        expect(r.body.value).to.equal(batch[j]!.value);
      });
    }
  });

  it('drains on SIGTERM: requests in flight finish, then every process exits 0', async () => {
    const pids = workerPids(p.child.pid!);
    const inFlight = Array.from({ length: 20 }, (_, i) =>
      send(p.url, 'PUT', `/v1/kv/drain/k${i}`, root, { value: 'v', type: 'secret' }).catch(
        () => undefined,
      ),
    );
    await new Promise((r) => setTimeout(r, 5));
    const code = await p.stop();
    expect(code).to.equal(0);
    const replies = await Promise.all(inFlight);
    for (const r of replies) if (r) expect(r.status).to.equal(201);
    await eventually(() => pids.every((pid) => !isAlive(pid)), { what: 'every worker gone' });

    p = await startProcess(env);
    for (const [i, r] of replies.entries()) {
      if (r) expect((await send(p.url, 'GET', `/v1/kv/drain/k${i}`, root)).status).to.equal(200);
    }
  });

  it('stops at once when SIGTERM comes while a replacement worker is still starting', async () => {
    const [victim] = workerPids(p.child.pid!);
    process.kill(victim!, 'SIGKILL');
    await eventually(
      () => workerPids(p.child.pid!).length === 2 && !workerPids(p.child.pid!).includes(victim!),
      { interval: 5, what: 'a replacement worker' },
    );
    const asked = Date.now();
    expect(await p.stop()).to.equal(0);
    // A shutdown told to a worker before it listened went unheard: the supervisor waited out its 15 s grace.
    expect(Date.now() - asked).to.be.lessThan(5000);
  });
});

/** What the supervisor and its workers were doing, for a failure's message (the supervisor's log is the test's own store). */
function supervisorState(p: CofferProcess): string {
  const exited =
    p.child.exitCode === null && p.child.signalCode === null
      ? `supervisor running, workers ${JSON.stringify(workerPids(p.child.pid!))}`
      : `supervisor exited (${p.child.exitCode ?? p.child.signalCode})`;
  return `${exited}; stderr: ${p.stderr().slice(-1500)}; log: ${p.stdout().slice(-1500)}`;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
