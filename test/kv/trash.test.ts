import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { onEachBackend } from '../support/each-backend.js';
import type { TestCoffer } from '../support/harness.js';

/** The version numbers a key's version list names, or its status when it has none. */
async function versionsOf(c: TestCoffer, path: string): Promise<number[] | number> {
  const res = await c.call('GET', `/v1/kv/${path}/versions`);
  return res.status === 200
    ? res.body.versions.map((v: { version: number }) => v.version)
    : res.status;
}

describe('the trash: delete keeps the versions, undelete brings the key back, destroy erases it', () => {
  onEachBackend((start) => {
    let c: TestCoffer;
    before(async () => {
      c = await start();
    });
    after(async () => {
      await c?.close();
    });

    it('a deleted key reads as absent (404 saying when), is in no listing, and its versions stay readable by number', async () => {
      for (const value of ['a', 'b', 'c']) await c.put('trash/k', value);
      await c.put('trash/other', 'x');
      await c.put('trash/sub/only', 'y');
      const before = Date.now();
      expect((await c.call('DELETE', '/v1/kv/trash/k')).status).to.equal(204);
      expect((await c.call('DELETE', '/v1/kv/trash/sub/only')).status).to.equal(204);

      const latest = await c.call('GET', '/v1/kv/trash/k');
      expect(latest.status).to.equal(404);
      expect(latest.body.code).to.equal('not_found');
      expect(Date.parse(latest.body.deleted_at)).to.be.within(before - 1000, Date.now() + 1000);
      expect(latest.text).to.not.include('"c"');
      // Listings, namespace reads and the namespace it alone held: as if it were not there.
      expect((await c.call('GET', '/v1/kv/trash/')).body).to.deep.include({
        keys: ['other'],
        namespaces: [],
      });
      expect((await c.call('GET', '/v1/kv/trash/sub')).status).to.equal(404);
      const values = await c.call('GET', '/v1/kv/trash/?values=true');
      expect(JSON.stringify(values.body)).to.not.include('"k"');
      // Deleted again: 404 saying it is deleted already, and when, as the read says it.
      const again = await c.call('DELETE', '/v1/kv/trash/k');
      expect([again.status, again.body.detail]).to.deep.equal([404, 'the key is deleted']);
      expect(again.body.deleted_at).to.equal(latest.body.deleted_at);
      expect((await c.call('DELETE', '/v1/kv/trash/never')).body.detail).to.equal('no such key');

      // Kept: each version by number, and the version list, saying when it was deleted.
      const v2 = await c.call('GET', '/v1/kv/trash/k?version=2');
      expect([v2.status, v2.body.value]).to.deep.equal([200, 'b']);
      const list = await c.call('GET', '/v1/kv/trash/k/versions');
      expect(list.body.current_version).to.equal(3);
      expect(list.body.deleted_at).to.equal(latest.body.deleted_at);
      expect(list.body.versions.map((v: { version: number }) => v.version)).to.deep.equal([
        1, 2, 3,
      ]);

      // The namespace's trash lists it, paged; a deleted key elsewhere is not in it.
      const trash = await c.call('GET', '/v1/kv/trash/?trash=true');
      expect(trash.body).to.deep.equal({
        kind: 'trash',
        namespace: 'trash',
        keys: [{ key: 'k', type: 'secret', version: 3, deleted_at: latest.body.deleted_at }],
        next_cursor: null,
      });
      await c.put('trash/k2', 'x');
      expect((await c.call('DELETE', '/v1/kv/trash/k2')).status).to.equal(204);
      const first = await c.call('GET', '/v1/kv/trash?trash=true&limit=1');
      expect(first.body.keys.map((k: { key: string }) => k.key)).to.deep.equal(['k']);
      const second = await c.call(
        'GET',
        `/v1/kv/trash?trash=true&limit=1&cursor=${first.body.next_cursor}`,
      );
      expect(second.body.keys.map((k: { key: string }) => k.key)).to.deep.equal(['k2']);
      expect(second.body.next_cursor).to.equal(null);
      // A listing's cursor is not the trash's, and the trash takes no listing-only parameter.
      await c.put('trash/z', 'x');
      const listing = await c.call('GET', '/v1/kv/trash/?limit=1');
      expect(listing.body.next_cursor).to.be.a('string');
      expect(
        (await c.call('GET', `/v1/kv/trash/?trash=true&cursor=${listing.body.next_cursor}`)).status,
      ).to.equal(400);
      expect((await c.call('GET', '/v1/kv/trash/?trash=true&values=true')).status).to.equal(400);
      expect((await c.call('GET', '/v1/kv/?trash=true')).status).to.equal(400);
    });

    it('undelete brings the key back as it was; a second undelete is 404', async () => {
      await c.put('undel/k', 'one');
      await c.put('undel/k', 'two');
      expect((await c.call('DELETE', '/v1/kv/undel/k')).status).to.equal(204);
      const back = await c.call('POST', '/v1/kv/undel/k?undelete=true');
      expect(back.status, back.text).to.equal(200);
      expect(back.body).to.include({ namespace: 'undel', key: 'k', version: 2, type: 'secret' });
      expect((await c.call('GET', '/v1/kv/undel/k')).body.value).to.equal('two');
      expect((await c.call('GET', '/v1/kv/undel/')).body.keys).to.deep.equal(['k']);
      expect((await c.call('GET', '/v1/kv/undel/k/versions')).body).to.not.have.property(
        'deleted_at',
      );
      expect((await c.call('POST', '/v1/kv/undel/k?undelete=true')).status).to.equal(404);
      expect((await c.call('POST', '/v1/kv/undel/never?undelete=true')).status).to.equal(404);
      // POST on a key means nothing else.
      expect((await c.call('POST', '/v1/kv/undel/k')).status).to.equal(400);
    });

    it('a write to a deleted key takes its versions on and empties its place in the trash', async () => {
      await c.put('again/k', 'one');
      await c.put('again/k', 'two');
      expect((await c.call('DELETE', '/v1/kv/again/k')).status).to.equal(204);
      // As for a key that does not exist: created, and cas=0 holds.
      const put = await c.call('PUT', '/v1/kv/again/k?cas=0', {
        json: { value: 'three', type: 'secret' },
      });
      expect([put.status, put.body.version]).to.deep.equal([201, 3]);
      expect(await versionsOf(c, 'again/k')).to.deep.equal([1, 2, 3]);
      expect((await c.call('GET', '/v1/kv/again/k?version=1')).body.value).to.equal('one');
      expect((await c.call('POST', '/v1/kv/again/k?undelete=true')).status).to.equal(404);
    });

    it('destroy erases a key for good, live or deleted; numbering goes on after it', async () => {
      await c.put('gone/live', 'a');
      await c.put('gone/live', 'b');
      expect((await c.call('DELETE', '/v1/kv/gone/live?destroy=true')).status).to.equal(204);
      expect((await c.call('GET', '/v1/kv/gone/live?version=1')).status).to.equal(404);
      expect(await versionsOf(c, 'gone/live')).to.equal(404);
      expect((await c.call('POST', '/v1/kv/gone/live?undelete=true')).status).to.equal(404);

      await c.put('gone/trashed', 'a');
      expect((await c.call('DELETE', '/v1/kv/gone/trashed')).status).to.equal(204);
      // cas=0: only a deleted key; a live one at another version is 412.
      expect((await c.call('DELETE', '/v1/kv/gone/trashed?destroy=true&cas=0')).status).to.equal(
        204,
      );
      expect((await c.call('GET', '/v1/kv/gone/trashed?version=1')).status).to.equal(404);
      expect((await c.call('DELETE', '/v1/kv/gone/trashed?destroy=true')).status).to.equal(404);
      const again = await c.put('gone/trashed', 'b');
      expect([again.status, again.body.version]).to.deep.equal([201, 2]);
      expect(await versionsOf(c, 'gone/trashed')).to.deep.equal([2]);
      expect((await c.call('DELETE', '/v1/kv/gone/trashed?destroy=true&cas=1')).status).to.equal(
        412,
      );
    });

    it('needs the right to delete the key’s type; every change is audited under its own action', async () => {
      const role = await c.call('PUT', '/v1/sys/roles/config-editor', {
        json: {
          rules: [
            {
              namespaces: ['rights'],
              actions: ['read', 'list', 'write', 'delete'],
              types: ['config'],
            },
          ],
          privileges: [],
        },
      });
      expect(role.status, role.text).to.be.oneOf([200, 201]);
      const configs = await c.token({ role: 'config-editor' });
      await c.put('rights/s', 'secret-value', 'secret');
      expect((await c.call('DELETE', '/v1/kv/rights/s', { token: configs })).status).to.equal(403);
      expect((await c.call('DELETE', '/v1/kv/rights/s')).status).to.equal(204);
      // Deleted again by a token that may not list secrets: nothing said of the secret it was.
      const blind = await c.call('DELETE', '/v1/kv/rights/s', { token: configs });
      expect([blind.status, blind.body.detail, blind.body.deleted_at]).to.deep.equal([
        404,
        'no such key',
        undefined,
      ]);
      for (const [method, path] of [
        ['POST', '/v1/kv/rights/s?undelete=true'],
        ['DELETE', '/v1/kv/rights/s?destroy=true'],
        ['GET', '/v1/kv/rights/s?version=1'],
      ] as const)
        expect((await c.call(method, path, { token: configs })).status, path).to.equal(403);
      // Nor may its versions be taken on by a write of another type.
      const put = await c.call('PUT', '/v1/kv/rights/s', {
        token: configs,
        json: { value: 'plain', type: 'config' },
      });
      expect(put.status).to.equal(403);
      expect((await c.call('POST', '/v1/kv/rights/s?undelete=true')).status).to.equal(200);
      expect((await c.call('DELETE', '/v1/kv/rights/s?destroy=true')).status).to.equal(204);

      const status = (l: Record<string, unknown>) => (l.outcome as { status: number }).status;
      const entries = auditLines(c.config.audit.dir!).filter(
        (l) =>
          l.kind === 'request' &&
          l.namespace === 'rights' &&
          l.method !== 'GET' &&
          status(l) !== 403 &&
          status(l) !== 404,
      );
      expect(entries.map((l) => [l.method, l.action, status(l)])).to.deep.equal([
        ['PUT', 'write', 201],
        ['DELETE', 'delete', 204],
        ['POST', 'undelete', 200],
        ['DELETE', 'destroy', 204],
      ]);
      // (A write refused under the store's lock has its intent too: the answered ones' are these.)
      const answered = new Set(entries.map((l) => l.request_id));
      const intents = auditLines(c.config.audit.dir!).filter(
        (l) => l.kind === 'intent' && answered.has(l.request_id),
      );
      expect(intents.map((l) => l.action)).to.deep.equal([
        'write',
        'delete',
        'undelete',
        'destroy',
      ]);
    });
  });
});
