import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { snapshotName, startScheduledSnapshots } from '../../src/operator/scheduled-snapshots.js';
import { checkSnapshot } from '../../src/store/snapshot.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, tempDir } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { dropTestSchemas, requirePostgres, testSchema } from '../support/postgres.js';
import { runCoffer, runToExit, serveSettings, startProcess } from '../support/process.js';
import { pgEnv } from '../support/shared-servers.js';

const SNAPSHOT = /^coffer-snapshot-\d{8}T\d{9}Z\.snap$/;

describe('scheduled snapshots (COFFER_SNAPSHOT_DIR, _EVERY, _KEEP)', function () {
  this.timeout(60_000);

  it('writes one every interval while the server serves, owner-only and whole, keeps the newest KEEP, and each restores', async () => {
    const snapshots = join(tempDir(), 'snapshots');
    const { root, env } = serveSettings(1, {
      COFFER_SNAPSHOT_DIR: snapshots,
      COFFER_SNAPSHOT_EVERY: '1s',
      COFFER_SNAPSHOT_KEEP: '2',
    });
    const p = await startProcess(env);
    try {
      expect(
        (await send(p.url, 'PUT', '/v1/kv/sched/k', root, { value: 'kept', type: 'secret' }))
          .status,
      ).to.equal(201);
      // A .partial left by a run that was killed (nothing written to it for ten minutes) is removed.
      const planted = `${snapshotName(Date.now() - 600_000)}.partial`;
      writeFileSync(join(snapshots, planted), 'cut short');
      const tenMinutesAgo = new Date(Date.now() - 600_000);
      utimesSync(join(snapshots, planted), tenMinutesAgo, tenMinutesAgo);
      // Three runs written (each logs after it has pruned): the third has pruned to two.
      await eventually(
        () => ((p.stdout() + p.stderr()).match(/scheduled snapshot written/g) ?? []).length >= 3,
        { timeout: 15_000, interval: 100, what: 'three scheduled snapshots' },
      );
      const names = readdirSync(snapshots);
      expect(names.filter((n) => SNAPSHOT.test(n))).to.have.length(2);
      expect(names).to.not.include(planted);
      expect(p.stdout() + p.stderr()).to.match(/scheduled snapshot written/);
      const newest = join(
        snapshots,
        names
          .filter((n) => SNAPSHOT.test(n))
          .sort()
          .at(-1)!,
      );
      expect(statSync(newest).mode & 0o777).to.equal(0o600);

      // The API lists them, newest first (the console's keyring screen shows this), never a .partial.
      const listed = await send(p.url, 'GET', '/v1/sys/snapshots', root);
      expect(listed.status).to.equal(200);
      expect(listed.body).to.include({ scheduled: true, every: '1s', keep: 2 });
      expect(Date.parse(listed.body.next_at)).to.be.above(Date.now() - 1000);
      const shown = listed.body.snapshots as { name: string; taken_at: string; bytes: number }[];
      // A run may be between writing its snapshot and pruning: two or three.
      expect(shown.length).to.be.within(2, 3);
      for (const s of shown) {
        expect(s.name).to.match(SNAPSHOT);
        expect(s.bytes).to.be.above(0);
      }
      const taken = shown.map((s) => Date.parse(s.taken_at));
      expect(taken).to.deep.equal([...taken].sort((x, y) => y - x));
      expect(snapshotName(taken[0]!)).to.equal(shown[0]!.name);
      const metrics = await send(p.url, 'GET', '/v1/sys/metrics', root);
      const newestGauge = /^coffer_snapshot_newest_timestamp_seconds (\S+)$/m.exec(
        metrics.body as string,
      )?.[1];
      expect(Number(newestGauge)).to.be.at.least(taken[0]! / 1000);

      const summary = await checkSnapshot(newest);
      expect(summary.records).to.be.greaterThan(0);

      // It restores into an empty store that a server with the same key and root token opens.
      const target = join(tempDir(), 'data');
      const restored = await runCoffer(['operator', 'restore', '--from', newest], {
        COFFER_DATA_DIR: target,
        COFFER_MASTER_KEY_FILE: env.COFFER_MASTER_KEY_FILE,
        COFFER_LOG_LEVEL: 'silent',
      });
      expect(restored.stdout).to.match(/authenticated/);
      expect(restored.code, restored.stderr).to.equal(0);
      const copy = await startTestCoffer({
        rootToken: root,
        env: { COFFER_DATA_DIR: target, COFFER_MASTER_KEY_FILE: env.COFFER_MASTER_KEY_FILE },
      });
      try {
        expect((await copy.call('GET', '/v1/kv/sched/k')).body.value).to.equal('kept');
      } finally {
        await copy.close();
      }
    } finally {
      await p.stop();
    }
  });

  it('says when none are scheduled; listing them takes read_keyring', async () => {
    const c = await startTestCoffer();
    try {
      const none = await c.call('GET', '/v1/sys/snapshots');
      expect(none.status).to.equal(200);
      expect(none.body).to.deep.equal({
        scheduled: false,
        every: null,
        keep: null,
        next_at: null,
        snapshots: [],
      });
      expect(
        (await c.call('GET', '/v1/sys/snapshots', { token: await c.token({ role: 'auditor' }) }))
          .status,
      ).to.equal(200);
      expect(
        (await c.call('GET', '/v1/sys/snapshots', { token: await c.token({ role: 'writer' }) }))
          .status,
      ).to.equal(403);
      expect((await c.call('GET', '/v1/sys/metrics')).text).to.not.include('coffer_snapshot_');
    } finally {
      await c.close();
    }
  });

  it('takes one snapshot per interval between servers that share the directory and the store', async function () {
    await requirePostgres(this);
    const schema = testSchema();
    const snapshots = join(tempDir(), 'shared-snapshots');
    const schedule = {
      ...pgEnv(schema),
      COFFER_SNAPSHOT_DIR: snapshots,
      COFFER_SNAPSHOT_EVERY: '1s',
      COFFER_SNAPSHOT_KEEP: '100',
    };
    const first = serveSettings(1, schedule);
    // From before the first server starts: every interval that begins from here on may have its file.
    const began = Date.now();
    const a = await startProcess(first.env);
    let b: Awaited<ReturnType<typeof startProcess>> | undefined;
    let ended = began;
    try {
      b = await startProcess({
        ...serveSettings(1, schedule).env,
        COFFER_ROOT_TOKEN: first.root,
        COFFER_MASTER_KEY_FILE: first.env.COFFER_MASTER_KEY_FILE,
      });
      await eventually(
        () =>
          readdirSync(snapshots).filter((n) => SNAPSHOT.test(n)).length >= 3 &&
          /taken by another server/.test(a.stdout() + b!.stdout()),
        { timeout: 20_000, interval: 100, what: 'three intervals, one skipped by a server' },
      );
    } finally {
      ended = Date.now();
      await b?.stop();
      await a.stop();
      await dropTestSchemas();
    }
    const taken = readdirSync(snapshots).filter((n) => SNAPSHOT.test(n));
    const logs = a.stdout() + b!.stdout();
    const written = logs.match(/scheduled snapshot written/g) ?? [];
    const skipped = logs.match(/taken by another server/g) ?? [];
    // Each file is named for the start of its interval, counted from the epoch (every server agrees on
    // it), and at most one file per interval that began while they ran (none for an interval twice).
    for (const name of taken) expect(name).to.match(/000Z\.snap$/);
    expect(taken.length).to.be.at.most(Math.ceil((ended - began) / 1000) + 1);
    expect(taken.length).to.be.at.least(3);
    expect(written).to.have.length(taken.length);
    expect(skipped.length).to.be.at.least(1);
    for (const name of taken)
      expect((await checkSnapshot(join(snapshots, name))).records).to.be.above(0);
  });

  it('waits for an interval longer than a timer can hold instead of running at once', async () => {
    const dir = tempDir();
    const config = loadConfig({ COFFER_DATA_DIR: join(dir, 'data') });
    const lines: string[] = [];
    const schedule = startScheduledSnapshots({
      storage: config,
      dir,
      everyMs: 60 * 86_400_000, // 60 days: past setTimeout's 24.8, which would fire at once
      keep: 1,
      log: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }),
    });
    await new Promise((r) => setTimeout(r, 300));
    await schedule.stop();
    expect(lines).to.deep.equal([]);
    expect(readdirSync(dir).filter((n) => n.startsWith('coffer-snapshot'))).to.deep.equal([]);
  });

  it('refuses a directory without an interval, or an interval without a directory, with one line', async () => {
    expect(() => loadConfig({ COFFER_SNAPSHOT_DIR: '/tmp/x' })).to.throw(/COFFER_SNAPSHOT_EVERY/);
    expect(() => loadConfig({ COFFER_SNAPSHOT_EVERY: '6h' })).to.throw(/COFFER_SNAPSHOT_DIR/);
    expect(() =>
      loadConfig({ COFFER_SNAPSHOT_DIR: '/tmp/x', COFFER_SNAPSHOT_EVERY: 'hourly' }),
    ).to.throw(/COFFER_SNAPSHOT_EVERY: invalid value/);
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    const exited = await runToExit({
      COFFER_DATA_DIR: join(tempDir(), 'data'),
      COFFER_SNAPSHOT_DIR: file,
      COFFER_SNAPSHOT_EVERY: '6h',
    });
    expect(exited.code).to.equal(2);
    expect(exited.stderr.trim().split('\n')).to.have.length(1);
    expect(exited.stderr).to.match(/COFFER_SNAPSHOT_DIR: .* is a file/);
  });
});
