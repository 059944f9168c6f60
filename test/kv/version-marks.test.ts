import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { onEachBackend } from '../support/each-backend.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { runCoffer, serveSettings, startProcess } from '../support/process.js';

/** Versions deleted, undeleted and destroyed one by one (?versions=), the others kept. */
describe('versions one by one: DELETE ?versions=, ?destroy=true&versions=, POST ?undelete=true&versions=', () => {
  onEachBackend((start) => {
    let c: TestCoffer;
    before(async () => {
      c = await start();
    });
    after(async () => {
      await c?.close();
    });

    const read = (path: string) => c.call('GET', `/v1/kv/${path}`);
    const marks = async (path: string) =>
      (await c.call('GET', `/v1/kv/${path}/versions`)).body.versions.map(
        (v: { version: number; deleted_at?: string; destroyed?: boolean }) =>
          v.destroyed ? `${v.version}x` : v.deleted_at ? `${v.version}d` : String(v.version),
      );

    it('deletes an older version (404 with deleted_at until undeleted), the others and the latest read as before', async () => {
      for (const v of ['1', '2', '3', '4']) await c.put('marks/a', v);
      const del = await c.call('DELETE', '/v1/kv/marks/a?versions=2');
      expect(del.status, del.text).to.equal(200);
      expect(del.body).to.deep.equal({
        namespace: 'marks',
        key: 'a',
        action: 'delete',
        versions: [2],
        key_state: 'live',
      });
      const gone = await read('marks/a?version=2');
      expect(gone.status).to.equal(404);
      expect(gone.body.detail).to.equal('version 2 is deleted');
      expect(Date.parse(gone.body.deleted_at)).to.be.closeTo(Date.now(), 60_000);
      expect((await read('marks/a')).body.value).to.equal('4');
      expect((await read('marks/a?version=1')).body.value).to.equal('1');
      expect(await marks('marks/a')).to.deep.equal(['1', '2d', '3', '4']);
      // Already deleted: nothing changes; a version the key never had is left alone, however large.
      expect((await c.call('DELETE', '/v1/kv/marks/a?versions=2,9')).body.versions).to.deep.equal(
        [],
      );
      const huge = await c.call('DELETE', '/v1/kv/marks/a?destroy=true&versions=9999999999');
      expect([huge.status, huge.body.versions]).to.deep.equal([200, []]);
      const back = await c.call('POST', '/v1/kv/marks/a?undelete=true&versions=2');
      expect(back.body).to.include({ action: 'undelete', key_state: 'live' });
      expect(back.body.versions).to.deep.equal([2]);
      expect((await read('marks/a?version=2')).body.value).to.equal('2');
    });

    it('destroys versions alone: 404 destroyed, listed with their type and time; not undeleted; a write numbers on', async () => {
      for (const v of ['1', '2', '3']) await c.put('marks/b', v);
      const destroyed = await c.call('DELETE', '/v1/kv/marks/b?destroy=true&versions=1,2');
      expect(destroyed.status, destroyed.text).to.equal(200);
      expect(destroyed.body).to.include({ action: 'destroy', key_state: 'live' });
      expect(destroyed.body.versions).to.deep.equal([1, 2]);
      const gone = await read('marks/b?version=1');
      expect(gone.status).to.equal(404);
      expect(gone.body).to.include({ destroyed: true, detail: 'version 1 is destroyed' });
      const list = (await c.call('GET', '/v1/kv/marks/b/versions')).body;
      expect(list.versions[0]).to.include({ version: 1, type: 'secret', destroyed: true });
      expect(list.versions[0].created_at).to.be.a('string');
      expect(
        (await c.call('POST', '/v1/kv/marks/b?undelete=true&versions=1')).body.versions,
      ).to.deep.equal([]);
      expect((await c.put('marks/b', '4')).body.version).to.equal(4);
      expect(await marks('marks/b')).to.deep.equal(['1x', '2x', '3', '4']);
      expect((await read('marks/b?version=3')).body.value).to.equal('3');
    });

    it('naming the latest version deletes the key (the trash), and undeleting it restores the key; a destroyed latest cannot be restored', async () => {
      for (const v of ['1', '2', '3']) await c.put('marks/c', v);
      const del = await c.call('DELETE', '/v1/kv/marks/c?versions=1,3');
      expect(del.body).to.include({ key_state: 'deleted' });
      expect(del.body.versions).to.deep.equal([1, 3]);
      expect((await read('marks/c')).status).to.equal(404);
      expect(
        (await c.call('GET', '/v1/kv/marks/?trash=true')).body.keys.map(
          (k: { key: string }) => k.key,
        ),
      ).to.include('c');
      // A deleted key's versions are read by number, unless deleted alone.
      expect((await read('marks/c?version=2')).body.value).to.equal('2');
      expect((await read('marks/c?version=1')).status).to.equal(404);
      const back = await c.call('POST', '/v1/kv/marks/c?undelete=true&versions=3');
      expect(back.body).to.include({ key_state: 'live' });
      expect((await read('marks/c')).body.value).to.equal('3');
      expect((await read('marks/c?version=1')).status).to.equal(404);
      // Destroying the latest of a live key deletes the key too; it cannot come back as it was.
      const destroyed = await c.call('DELETE', '/v1/kv/marks/c?destroy=true&versions=3');
      expect(destroyed.body).to.include({ key_state: 'deleted' });
      const undelete = await c.call('POST', '/v1/kv/marks/c?undelete=true');
      expect(undelete.status, undelete.text).to.equal(409);
      expect(undelete.body.detail).to.include('latest version (3) is destroyed');
      expect((await c.put('marks/c', '4')).status).to.equal(201);
      expect(await marks('marks/c')).to.deep.equal(['1d', '2', '3x', '4']);
    });

    it('max_versions prunes past the marks; the whole key destroyed takes them with it', async () => {
      for (const v of ['1', '2', '3']) await c.put('marks/d', v);
      await c.call('DELETE', '/v1/kv/marks/d?versions=1');
      await c.call('DELETE', '/v1/kv/marks/d?destroy=true&versions=2');
      await c.call('PATCH', '/v1/kv/marks/d', { json: { max_versions: 2 } });
      const put = await c.put('marks/d', '4');
      expect(put.body.version).to.equal(4);
      expect(await marks('marks/d')).to.deep.equal(['3', '4']);
      expect((await c.call('DELETE', '/v1/kv/marks/d?destroy=true')).status).to.equal(204);
      expect((await c.call('GET', '/v1/kv/marks/d/versions')).status).to.equal(404);
    });

    it('refuses bad lists, cas beside them, a key that is not there, and a caller without the delete right', async () => {
      await c.put('marks/e', '1');
      for (const q of [
        'versions=0',
        'versions=a',
        'versions=1,,2',
        'versions=',
        'versions=1&cas=1',
      ])
        expect((await c.call('DELETE', `/v1/kv/marks/e?${q}`)).status, q).to.equal(400);
      expect((await c.call('DELETE', '/v1/kv/marks/none?versions=1')).status).to.equal(404);
      const reader = await c.token({ role: 'reader' });
      expect(
        (await c.call('DELETE', '/v1/kv/marks/e?versions=1', { token: reader })).status,
      ).to.equal(403);
      expect((await read('marks/e')).body.value).to.equal('1');
    });

    it('audits each with the versions it changed, and its intent', async () => {
      for (const v of ['1', '2']) await c.put('marks/f', v);
      await c.call('DELETE', '/v1/kv/marks/f?versions=1');
      await c.call('POST', '/v1/kv/marks/f?undelete=true&versions=1');
      await c.call('DELETE', '/v1/kv/marks/f?destroy=true&versions=1');
      const lines = auditLines(c.config.audit.dir!).filter((l) => l.key === 'f');
      expect(
        lines
          .filter((l) => l.kind === 'request' && l.action !== 'write')
          .map((l) => [l.action, l.versions]),
      ).to.deep.equal([
        ['delete', [1]],
        ['undelete', [1]],
        ['destroy', [1]],
      ]);
      expect(lines.filter((l) => l.kind === 'intent').map((l) => l.action)).to.include.members([
        'delete',
        'undelete',
        'destroy',
      ]);
    });
  });
});

describe('verify holds over versions destroyed one by one', function () {
  this.timeout(60_000);
  it('counts a version destroyed alone as destroyed by that request, not as a write missing', async () => {
    const { root, env } = serveSettings(1);
    const p = await startProcess(env);
    try {
      for (const value of ['a', 'b', 'c'])
        await send(p.url, 'PUT', '/v1/kv/vm/k', root, { value, type: 'secret' });
      const res = await send(p.url, 'DELETE', '/v1/kv/vm/k?destroy=true&versions=1,2', root);
      expect(res.status).to.equal(200);
    } finally {
      await p.stop();
    }
    const verify = await runCoffer(['audit', 'verify'], env);
    expect(verify.code, verify.stdout).to.equal(0);
    expect(verify.stdout).to.match(/^intact: /);
  });
});

describe('versions one by one: at most 1,000 marked on a key', function () {
  this.timeout(120_000);
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c?.close();
  });

  it('refuses (400) a change that would mark more, and changes nothing', async () => {
    for (let v = 1; v <= 1002; v++) await c.put('limit/k', String(v));
    const all = Array.from({ length: 1000 }, (_, i) => i + 1).join(',');
    const first = await c.call('DELETE', `/v1/kv/limit/k?versions=${all}`);
    expect(first.status, first.text).to.equal(200);
    expect(first.body.versions).to.have.length(1000);
    const over = await c.call('DELETE', '/v1/kv/limit/k?destroy=true&versions=1001');
    expect(over.status, over.text).to.equal(400);
    expect(over.body.detail).to.include('at most 1000 versions');
    expect((await c.call('GET', '/v1/kv/limit/k?version=1001')).body.value).to.equal('1001');
    // Taking marks off is always possible.
    const back = await c.call('POST', '/v1/kv/limit/k?undelete=true&versions=1');
    expect(back.body.versions).to.deep.equal([1]);
  });
});
