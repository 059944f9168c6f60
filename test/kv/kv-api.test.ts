import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

describe('key-value API', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c.close();
  });

  describe('a namespace sent with its slashes encoded (%2F), as a generated client sends it', () => {
    it('is the same namespace for every operation, authorization and the audit log', async () => {
      const put = await c.call('PUT', '/v1/kv/enc%2Fprod/db', {
        json: { value: 'one', type: 'secret' },
      });
      expect(put.status, put.text).to.equal(201);
      expect((await c.put('enc/prod/db', 'two', 'secret')).status).to.equal(200);
      for (const path of ['/v1/kv/enc%2Fprod/db', '/v1/kv/enc%2fprod/db', '/v1/kv/enc/prod/db']) {
        const read = await c.call('GET', path);
        expect([read.status, read.body.value], path).to.deep.equal([200, 'two']);
      }
      const versions = await c.call('GET', '/v1/kv/enc%2Fprod/db/versions');
      expect(versions.status).to.equal(200);
      expect(versions.body.versions.map((v: { version: number }) => v.version)).to.deep.equal([
        1, 2,
      ]);
      // The namespace alone, in one segment: its listing, as /v1/kv/enc/prod/ lists it.
      const listing = await c.call('GET', '/v1/kv/enc%2Fprod');
      expect(listing.status).to.equal(200);
      expect(listing.body).to.deep.equal((await c.call('GET', '/v1/kv/enc/prod/')).body);
      expect(JSON.stringify(listing.body)).to.include('db');
      // A token for enc/prod may use it encoded; one for enc/dev may not.
      const prod = await c.token({ scopes: [{ namespace: 'enc/prod', read: true }] });
      const dev = await c.token({ scopes: [{ namespace: 'enc/dev', read: true }] });
      expect((await c.call('GET', '/v1/kv/enc%2Fprod/db', { token: prod })).status).to.equal(200);
      expect((await c.call('GET', '/v1/kv/enc%2Fprod/db', { token: dev })).status).to.equal(403);
      expect((await c.call('DELETE', '/v1/kv/enc%2Fprod/db')).status).to.equal(204);
      expect((await c.call('GET', '/v1/kv/enc/prod/db')).status).to.equal(404);
      const entries = auditLines(c.config.audit.dir!).filter(
        (l) => l.kind === 'request' && l.namespace === 'enc/prod' && l.key === 'db',
      );
      expect(entries.map((l) => l.method)).to.include.members(['PUT', 'GET', 'DELETE']);
      expect(JSON.stringify(auditLines(c.config.audit.dir!))).to.not.include('%2F');
    });

    it('never in the key: %2F in the segment that names the key is a 400', async () => {
      for (const [method, path] of [
        ['PUT', '/v1/kv/enc/a%2Fb'],
        ['GET', '/v1/kv/enc%2Fprod/a%2Fb'],
        ['DELETE', '/v1/kv/enc/a%2Fb'],
      ] as const) {
        const res = await c.call(method, path, {
          ...(method === 'PUT' ? { json: { value: 'x', type: 'config' } } : {}),
        });
        expect(res.status, `${method} ${path}`).to.equal(400);
        expect(res.body.detail, path).to.match(/key cannot hold %2F/);
      }
    });
  });

  describe('PUT', () => {
    it('creates a key with 201 and adds versions with 200', async () => {
      const first = await c.put('app/prod/db', 's3cret-1');
      expect(first.status).to.equal(201);
      expect(first.body).to.include({
        namespace: 'app/prod',
        key: 'db',
        version: 1,
        type: 'secret',
      });
      expect(first.body).to.have.all.keys('namespace', 'key', 'version', 'type', 'created_at');
      expect(Date.parse(first.body.created_at)).to.be.closeTo(Date.now(), 60_000);
      const second = await c.put('app/prod/db', 's3cret-2');
      expect(second.status).to.equal(200);
      expect(second.body.version).to.equal(2);
    });

    it('assigns 50 concurrent PUTs to one key the distinct versions 1..50', async () => {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => c.put('race/k', `v${i}`)),
      );
      const versions = results.map((r) => r.body.version as number).sort((a, b) => a - b);
      expect(versions).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(results.filter((r) => r.status === 201)).to.have.length(1);
      const listed = await c.call('GET', '/v1/kv/race/k/versions');
      expect(listed.body.versions.map((v: { version: number }) => v.version)).to.deep.equal(
        versions,
      );
      // Each version holds the value its PUT was told it got.
      for (const r of results.slice(0, 5)) {
        const read = await c.call('GET', `/v1/kv/race/k?version=${r.body.version}`);
        expect(read.body.value).to.equal(`v${results.indexOf(r)}`);
      }
    });

    it('refuses the reserved key name versions, a missing key segment and a trailing slash', async () => {
      for (const path of ['/v1/kv/app/versions', '/v1/kv/app', '/v1/kv/app/key/', '/v1/kv/a//b']) {
        const res = await c.call('PUT', path, { json: { value: 'x', type: 'config' } });
        expect(res.status, path).to.equal(400);
        expect(res.body.code).to.equal('invalid_request');
      }
    });

    it('refuses bad names: percent-encoding, dot segments, long segments, 17 namespace segments', async () => {
      const deep = Array.from({ length: 17 }, (_, i) => `n${i}`).join('/');
      for (const path of [
        'a/b%2Fk',
        'a%2F..%2Fb/k',
        'a%2F%2Fb/k',
        'a%252Fb/k',
        'a/%2E%2E/k',
        'a/../k',
        'a/./k',
        `a/${'x'.repeat(129)}`,
        'a/b%00c',
        'a/b%20c',
        `${deep}/k`,
        'a/%C3%BC',
        'a/b\\c',
      ]) {
        const res = await c.call('PUT', `/v1/kv/${path}`, { json: { value: 'x', type: 'config' } });
        expect(res.status, path).to.equal(400);
      }
      const ok = await c.call(
        'PUT',
        `/v1/kv/${Array.from({ length: 16 }, (_, i) => `n${i}`).join('/')}/k`,
        { json: { value: 'x', type: 'config' } },
      );
      expect(ok.status).to.equal(201);
    });

    it('refuses bodies that are not exactly {value, type}', async () => {
      const cases: unknown[] = [
        { value: 'x' },
        { type: 'secret' },
        { value: 1, type: 'secret' },
        { value: 'x', type: 'other' },
        { value: 'x', type: 'secret', extra: true },
        ['x'],
        'x',
      ];
      for (const json of cases) {
        const res = await c.call('PUT', '/v1/kv/app/bad', { json });
        expect(res.status, JSON.stringify(json)).to.equal(400);
        expect(res.body.code).to.equal('invalid_request');
      }
      const unknown = await c.call('PUT', '/v1/kv/app/bad', {
        json: { value: 'x', type: 'secret', colour: 'red' },
      });
      expect(unknown.body.errors).to.deep.include({
        field: '/colour',
        in: 'body',
        message: 'unknown field "colour"',
      });
      expect((await c.call('GET', '/v1/kv/app/bad')).status).to.equal(404);
    });
  });

  describe('GET', () => {
    before(async () => {
      await c.put('read/k', 'one');
      await c.put('read/k', 'two', 'config');
    });

    it('returns the latest version with an ETag', async () => {
      const res = await c.call('GET', '/v1/kv/read/k');
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({
        namespace: 'read',
        key: 'k',
        version: 2,
        type: 'config',
        value: 'two',
      });
      expect(res.body).to.have.all.keys(
        'kind',
        'namespace',
        'key',
        'version',
        'type',
        'value',
        'created_at',
      );
      expect(res.headers.get('etag')).to.equal('"2"');
      expect(res.headers.get('cache-control')).to.equal('no-store');
    });

    it('returns a given version, 404 for a missing one, 400 for a malformed one', async () => {
      const v1 = await c.call('GET', '/v1/kv/read/k?version=1');
      expect(v1.body).to.include({ version: 1, type: 'secret', value: 'one' });
      expect(v1.headers.get('etag')).to.equal('"1"');
      expect((await c.call('GET', '/v1/kv/read/k?version=3')).status).to.equal(404);
      for (const v of ['0', '-1', '1.5', 'abc', '', '01', '99999999999']) {
        const res = await c.call('GET', `/v1/kv/read/k?version=${v}`);
        expect(res.status, v).to.equal(400);
      }
      expect((await c.call('GET', '/v1/kv/read/k?version=1&version=2')).status).to.equal(400);
    });

    it('refuses unknown query parameters, naming them', async () => {
      const res = await c.call('GET', '/v1/kv/read/k?verison=1');
      expect(res.status).to.equal(400);
      expect(res.body.detail).to.include('verison');
    });

    it('is 404 for a missing key in a missing namespace', async () => {
      const res = await c.call('GET', '/v1/kv/nothing/here');
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('not_found');
    });

    it('lists versions oldest first with their types', async () => {
      const res = await c.call('GET', '/v1/kv/read/k/versions');
      expect(res.status).to.equal(200);
      expect(res.body.namespace).to.equal('read');
      expect(res.body.key).to.equal('k');
      expect(res.body.current_version).to.equal(2);
      expect(
        res.body.versions.map((v: { version: number; type: string }) => [v.version, v.type]),
      ).to.deep.equal([
        [1, 'secret'],
        [2, 'config'],
      ]);
      expect((await c.call('GET', '/v1/kv/read/missing/versions')).status).to.equal(404);
      // `{ns}/versions` with one namespace segment names no key.
      expect((await c.call('GET', '/v1/kv/read/versions')).status).to.equal(400);
    });
  });

  describe('DELETE', () => {
    it('moves the key to the trash with 204, then 404; numbering continues after the last version', async () => {
      await c.put('del/k', 'a');
      await c.put('del/k', 'b');
      await c.put('del/k', 'c');
      const del = await c.call('DELETE', '/v1/kv/del/k');
      expect(del.status).to.equal(204);
      expect(del.text).to.equal('');
      expect((await c.call('GET', '/v1/kv/del/k')).status).to.equal(404);
      expect((await c.call('DELETE', '/v1/kv/del/k')).status).to.equal(404);
      // Destroyed, nothing is kept; the numbers are not used again (test/kv/trash.test.ts: the rest).
      expect((await c.call('DELETE', '/v1/kv/del/k?destroy=true')).status).to.equal(204);
      expect((await c.call('GET', '/v1/kv/del/k?version=1')).status).to.equal(404);
      expect((await c.call('GET', '/v1/kv/del/k/versions')).status).to.equal(404);
      const again = await c.put('del/k', 'd');
      expect(again.status).to.equal(201);
      expect(again.body.version).to.equal(4);
      expect((await c.call('GET', '/v1/kv/del/k?version=3')).status).to.equal(404);
      const versions = await c.call('GET', '/v1/kv/del/k/versions');
      expect(versions.body.versions.map((v: { version: number }) => v.version)).to.deep.equal([4]);
    });
  });
});
