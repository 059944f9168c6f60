import { expect } from 'chai';
import { onEachBackend } from '../support/each-backend.js';
import type { TestCoffer } from '../support/harness.js';

const ifMatch = (version: number | string) => ({
  headers: { 'if-match': typeof version === 'number' ? `"${version}"` : version },
});

/** The tests of check-and-set, on the server `start` gives. */
function checkAndSet(start: () => Promise<TestCoffer>): void {
  let c: TestCoffer;
  before(async () => {
    c = await start();
  });
  after(async () => {
    await c?.close();
  });

  const put = (path: string, value: string, init: object = {}, query = '') =>
    c.call('PUT', `/v1/kv/${path}${query}`, { json: { value, type: 'secret' }, ...init });
  const versions = async (path: string) =>
    (await c.call('GET', `/v1/kv/${path}/versions`)).body.current_version as number;

  it('PUT with If-Match writes only over the version named, and a 412 says the version there now', async () => {
    expect((await put('cas/a', 'v1')).status).to.equal(201);
    const read = await c.call('GET', '/v1/kv/cas/a');
    expect(read.headers.get('etag')).to.equal('"1"');
    expect((await put('cas/a', 'v2', ifMatch(read.headers.get('etag')!))).status).to.equal(200);
    const stale = await put('cas/a', 'v3', ifMatch(1));
    expect(stale.status).to.equal(412);
    expect(stale.body).to.include({ code: 'precondition_failed', current_version: 2 });
    expect(await versions('cas/a')).to.equal(2);
    expect((await c.call('GET', '/v1/kv/cas/a')).body.value).to.equal('v2');
    expect((await put('cas/a', 'v3', {}, '?cas=2')).status).to.equal(200);
    expect((await put('cas/a', 'v4', {}, '?cas=2')).body.current_version).to.equal(3);
  });

  it('cas=0 creates only a key that does not exist (also one that was deleted)', async () => {
    expect((await put('cas/b', 'x', {}, '?cas=0')).status).to.equal(201);
    const again = await put('cas/b', 'y', {}, '?cas=0');
    expect(again.status).to.equal(412);
    expect(again.body.current_version).to.equal(1);
    expect((await c.call('DELETE', '/v1/kv/cas/b')).status).to.equal(204);
    const recreated = await put('cas/b', 'z', {}, '?cas=0');
    expect(recreated.status).to.equal(201);
    expect(recreated.body.version).to.equal(2); // numbers are never reused
    expect((await put('cas/none', 'x', ifMatch(1))).body).to.include({ current_version: 0 });
  });

  it('DELETE with If-Match or cas deletes only the version named; nothing is changed on a 412', async () => {
    await put('cas/d', 'one');
    await put('cas/d', 'two');
    const stale = await c.call('DELETE', '/v1/kv/cas/d', ifMatch(1));
    expect(stale.status).to.equal(412);
    expect(stale.body.current_version).to.equal(2);
    expect(await versions('cas/d')).to.equal(2);
    expect((await c.call('DELETE', '/v1/kv/cas/d?cas=2')).status).to.equal(204);
    const gone = await c.call('DELETE', '/v1/kv/cas/d', ifMatch(2));
    expect(gone.status).to.equal(412);
    expect(gone.body.current_version).to.equal(0);
    expect((await c.call('DELETE', '/v1/kv/cas/d')).status).to.equal(404);
  });

  it('refuses a precondition it cannot read with 400', async () => {
    await put('cas/e', 'v');
    for (const header of ['W/"1"', '*', '1', '"0"', '"1", "2"', '"x"']) {
      const res = await put('cas/e', 'w', ifMatch(header));
      expect(res.status, header).to.equal(400);
      expect(res.body.errors[0].field, header).to.equal('If-Match');
    }
    expect((await put('cas/e', 'w', ifMatch(1), '?cas=2')).status).to.equal(400);
    expect((await c.call('DELETE', '/v1/kv/cas/e?cas=0')).status).to.equal(400);
    expect((await put('cas/e', 'w', {}, '?cas=-1')).status).to.equal(400);
    expect(await versions('cas/e')).to.equal(1);
  });

  it('of writers racing over one version, exactly one wins', async () => {
    await put('cas/race', 'start');
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => put('cas/race', `writer ${i}`, ifMatch(1))),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).to.have.length(1);
    expect(statuses.filter((s) => s === 412)).to.have.length(15);
    expect(await versions('cas/race')).to.equal(2);
    const deletes = await Promise.all(
      Array.from({ length: 8 }, () => c.call('DELETE', '/v1/kv/cas/race', ifMatch(2))),
    );
    expect(deletes.map((r) => r.status).filter((s) => s === 204)).to.have.length(1);
  });
}

describe('check-and-set (If-Match, cas)', () => {
  onEachBackend(checkAndSet);
});
