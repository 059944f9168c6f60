import { expect } from 'chai';
import { pruning } from '../../src/store/kv-version-writes.js';
import { auditLines } from '../support/audit-lines.js';
import { onEachBackend } from '../support/each-backend.js';
import type { TestCoffer } from '../support/harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Just past a one-second delete_version_after. */
const PAST_ONE_SECOND = 1_250;

/** A key's versions as marks: `1`, `1d` (deleted), `1t` (to be deleted at a time still to come). */
async function marks(c: TestCoffer, path: string): Promise<string[]> {
  const list = await c.call('GET', `/v1/kv/${path}/versions`);
  expect(list.status, list.text).to.equal(200);
  return list.body.versions.map(
    (v: { version: number; deleted_at?: string; deletes_at?: string }) =>
      `${v.version}${v.deleted_at ? 'd' : v.deletes_at ? 't' : ''}`,
  );
}

describe("delete_version_after: a key's versions deleted their time after they are written", () => {
  onEachBackend((start) => {
    let c: TestCoffer;
    before(async () => {
      c = await start();
    });
    after(async () => {
      await c?.close();
    });

    const setAfter = async (path: string, seconds: number) => {
      const res = await c.call('PATCH', `/v1/kv/${path}`, {
        json: { delete_version_after: seconds },
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.delete_version_after).to.equal(seconds);
    };

    it('a version written under it reads with deletes_at, then as deleted: 404 with deleted_at, out of listings and values, in the trash view', async () => {
      await c.put('timed/k', 'v1');
      await c.put('timed/stays', 'x');
      await setAfter('timed/k', 1);
      const written = await c.put('timed/k', 'v2');
      expect(written.status, written.text).to.equal(200);
      const deletesAt = Date.parse(written.body.deletes_at);
      expect(deletesAt - Date.parse(written.body.created_at)).to.equal(1000);
      const live = await c.call('GET', '/v1/kv/timed/k');
      expect([live.status, live.body.value, live.body.deletes_at]).to.deep.equal([
        200,
        'v2',
        written.body.deletes_at,
      ]);
      // Written before it was set: no time of its own.
      expect(await marks(c, 'timed/k')).to.deep.equal(['1', '2t']);

      await sleep(PAST_ONE_SECOND);
      const gone = await c.call('GET', '/v1/kv/timed/k');
      expect(gone.status).to.equal(404);
      expect(gone.body).to.include({
        detail: 'the key is deleted',
        deleted_at: written.body.deletes_at,
      });
      expect(gone.text).to.not.include('v2');
      const byNumber = await c.call('GET', '/v1/kv/timed/k?version=2');
      expect([byNumber.status, byNumber.body.detail]).to.deep.equal([404, 'version 2 is deleted']);
      expect((await c.call('GET', '/v1/kv/timed/k?version=1')).body.value).to.equal('v1');
      expect((await c.call('GET', '/v1/kv/timed/')).body).to.deep.include({
        keys: ['stays'],
        namespaces: [],
      });
      const details = await c.call('GET', '/v1/kv/timed/?details=true');
      expect(details.body.details.map((d: { key: string }) => d.key)).to.deep.equal(['stays']);
      const values = await c.call('GET', '/v1/kv/timed/?values=true');
      expect(values.body.values.map((v: { key: string }) => v.key)).to.deep.equal(['stays']);
      const list = (await c.call('GET', '/v1/kv/timed/k/versions')).body;
      expect(list).to.include({ deleted_at: written.body.deletes_at, delete_version_after: 1 });
      expect(await marks(c, 'timed/k')).to.deep.equal(['1', '2d']);
      const trash = await c.call('GET', '/v1/kv/timed/?trash=true');
      expect(trash.body.keys).to.deep.equal([
        { key: 'k', type: 'secret', version: 2, deleted_at: written.body.deletes_at },
      ]);
      // Deleted already: a delete says so, and when, as for one in the trash.
      const again = await c.call('DELETE', '/v1/kv/timed/k');
      expect([again.status, again.body.detail, again.body.deleted_at]).to.deep.equal([
        404,
        'the key is deleted',
        written.body.deletes_at,
      ]);
    });

    it('undelete brings the key back for good; a write after it is deleted its own time after', async () => {
      await setAfter('back/k', 0).catch(() => undefined);
      await c.put('back/k', 'v1');
      await setAfter('back/k', 1);
      await c.put('back/k', 'v2');
      await sleep(PAST_ONE_SECOND);
      expect((await c.call('GET', '/v1/kv/back/k')).status).to.equal(404);
      const back = await c.call('POST', '/v1/kv/back/k?undelete=true');
      expect([back.status, back.body.version], back.text).to.deep.equal([200, 2]);
      await sleep(PAST_ONE_SECOND);
      const read = await c.call('GET', '/v1/kv/back/k');
      expect([read.status, read.body.value, read.body.deletes_at]).to.deep.equal([
        200,
        'v2',
        undefined,
      ]);
      expect((await c.call('GET', '/v1/kv/back/')).body.keys).to.deep.equal(['k']);
      // Undeleted: no longer in the trash view, and a second undelete finds nothing to bring back.
      expect((await c.call('GET', '/v1/kv/back/?trash=true')).body.keys).to.deep.equal([]);
      expect((await c.call('POST', '/v1/kv/back/k?undelete=true')).status).to.equal(404);
      const next = await c.put('back/k', 'v3');
      expect(next.body.version).to.equal(3);
      expect(next.body.deletes_at).to.be.a('string');
      expect(await marks(c, 'back/k')).to.deep.equal(['1', '2', '3t']);
    });

    it('a key deleted by its time takes a write (a new live version); set to 0, new versions are kept, older ones keep their time', async () => {
      await c.put('rewrite/k', 'v1');
      await setAfter('rewrite/k', 1);
      await c.put('rewrite/k', 'v2');
      await sleep(PAST_ONE_SECOND);
      expect((await c.call('GET', '/v1/kv/rewrite/k')).status).to.equal(404);
      await setAfter('rewrite/k', 0);
      const written = await c.put('rewrite/k', 'v3');
      expect([written.status, written.body.version, written.body.deletes_at]).to.deep.equal([
        200,
        3,
        undefined,
      ]);
      await sleep(PAST_ONE_SECOND);
      expect((await c.call('GET', '/v1/kv/rewrite/k')).body.value).to.equal('v3');
      expect(await marks(c, 'rewrite/k')).to.deep.equal(['1', '2d', '3']);
      expect((await c.call('GET', '/v1/kv/rewrite/')).body.keys).to.deep.equal(['k']);
    });

    it('versions one by one: a delete of a version whose time is to come deletes it now; an undelete takes its time off', async () => {
      await setAfter('one/k', 3600).catch(() => undefined);
      await c.put('one/k', 'v1');
      await setAfter('one/k', 3600);
      await c.put('one/k', 'v2');
      await c.put('one/k', 'v3');
      expect(await marks(c, 'one/k')).to.deep.equal(['1', '2t', '3t']);
      const del = await c.call('DELETE', '/v1/kv/one/k?versions=2');
      expect(del.body.versions).to.deep.equal([2]);
      expect(await marks(c, 'one/k')).to.deep.equal(['1', '2d', '3t']);
      const undelete = await c.call('POST', '/v1/kv/one/k?undelete=true&versions=2,3');
      expect([undelete.body.versions, undelete.body.key_state]).to.deep.equal([[2, 3], 'live']);
      expect(await marks(c, 'one/k')).to.deep.equal(['1', '2', '3']);
      // Deleting the latest deletes the key (the trash); undeleting it brings it back without a time.
      await c.put('one/k', 'v4');
      expect((await c.call('DELETE', '/v1/kv/one/k?versions=4')).body.key_state).to.equal(
        'deleted',
      );
      expect((await c.call('POST', '/v1/kv/one/k?undelete=true')).status).to.equal(200);
      expect(await marks(c, 'one/k')).to.deep.equal(['1', '2', '3', '4']);
    });

    it('is audited as a metadata change (with its intent), and refused (400, nothing changed) when negative, fractional, over ten years or not a number', async () => {
      await c.put('checked/k', 'v1');
      for (const bad of [-1, 1.5, 10 * 365 * 86_400 + 1, '60']) {
        const res = await c.call('PATCH', '/v1/kv/checked/k', {
          json: { delete_version_after: bad },
        });
        expect(res.status, `${bad}: ${res.text}`).to.equal(400);
      }
      expect((await c.call('GET', '/v1/kv/checked/k/versions')).body.delete_version_after).to.equal(
        0,
      );
      await setAfter('checked/k', 90);
      const entries = auditLines(c.config.audit.dir!).filter(
        (l) => l.kind === 'request' && l.action === 'metadata' && l.namespace === 'checked',
      );
      expect(entries.map((l) => (l.outcome as { status: number }).status)).to.deep.equal([
        400, 400, 400, 400, 200,
      ]);
      const intents = auditLines(c.config.audit.dir!).filter(
        (l) => l.kind === 'intent' && l.action === 'metadata' && l.namespace === 'checked',
      );
      expect(intents).to.have.length(1);
    });
  });
});

describe('delete_version_after: the versions a key keeps are bounded while it is set', () => {
  it('a write beyond 1,000 versions prunes the oldest, as max_versions does, so their marks stay bounded', () => {
    const timed = { latest: 1000, first: 1, type: 'secret' as const, deleteAfter: 60_000 };
    expect(pruning(timed, 1001)).to.deep.equal({ first: 2, pruned: [1] });
    expect(pruning({ ...timed, maxVersions: 5000 }, 1001)).to.deep.equal({ first: 2, pruned: [1] });
    expect(pruning({ ...timed, maxVersions: 10, first: 991 }, 1001)).to.deep.equal({
      first: 992,
      pruned: [991],
    });
    const { deleteAfter: _none, ...untimed } = timed;
    expect(pruning(untimed, 1001)).to.deep.equal({ first: 1, pruned: [] });
  });
});
