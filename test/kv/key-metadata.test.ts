import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { onEachBackend } from '../support/each-backend.js';
import type { TestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { runCoffer, serveSettings, startProcess } from '../support/process.js';

describe("a key's own metadata and max_versions (PATCH /v1/kv/{ns}/{key})", () => {
  onEachBackend((start) => {
    let c: TestCoffer;
    before(async () => {
      c = await start();
    });
    after(async () => {
      await c?.close();
    });

    it('keeps custom metadata beside the versions, through writes, delete and undelete', async () => {
      await c.put('meta/k', 'one');
      const set = await c.call('PATCH', '/v1/kv/meta/k', {
        json: { custom_metadata: { owner: 'payments', 'rotated.by': 'ops' } },
      });
      expect(set.status, set.text).to.equal(200);
      expect(set.body).to.deep.equal({
        namespace: 'meta',
        key: 'k',
        custom_metadata: { owner: 'payments', 'rotated.by': 'ops' },
        max_versions: 0,
        cas_required: false,
        delete_version_after: 0,
      });
      await c.put('meta/k', 'two');
      expect((await c.call('DELETE', '/v1/kv/meta/k')).status).to.equal(204);
      expect((await c.call('POST', '/v1/kv/meta/k?undelete=true')).status).to.equal(200);
      const list = (await c.call('GET', '/v1/kv/meta/k/versions')).body;
      expect(list.custom_metadata).to.deep.equal({ owner: 'payments', 'rotated.by': 'ops' });
      // Replaced whole when given; {} empties it.
      await c.call('PATCH', '/v1/kv/meta/k', { json: { custom_metadata: {} } });
      expect((await c.call('GET', '/v1/kv/meta/k/versions')).body.custom_metadata).to.deep.equal(
        {},
      );
    });

    it('refuses what is out of bounds, and needs the right to write the key', async () => {
      await c.put('meta/b', 'x');
      for (const json of [
        {},
        { custom_metadata: { 'bad name': 'x' } },
        { custom_metadata: { a: 'x'.repeat(1025) } },
        {
          custom_metadata: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`f${i}`, 'x'])),
        },
        {
          custom_metadata: Object.fromEntries(
            Array.from({ length: 5 }, (_, i) => [`f${i}`, 'x'.repeat(1000)]),
          ),
        },
        { max_versions: -1 },
        { cas_required: 'yes' },
        { unknown: 1 },
      ])
        expect(
          (await c.call('PATCH', '/v1/kv/meta/b', { json })).status,
          JSON.stringify(json),
        ).to.equal(400);
      const reader = await c.token({ role: 'reader' });
      expect(
        (await c.call('PATCH', '/v1/kv/meta/b', { token: reader, json: { max_versions: 1 } }))
          .status,
      ).to.equal(403);
      expect(
        (await c.call('PATCH', '/v1/kv/meta/none', { json: { max_versions: 1 } })).status,
      ).to.equal(404);
    });

    it('max_versions: a write beyond it destroys the oldest, named in its audit entry; verify still holds', async () => {
      for (const v of ['1', '2', '3']) await c.put('meta/m', v);
      expect(
        (await c.call('PATCH', '/v1/kv/meta/m', { json: { max_versions: 2 } })).body.max_versions,
      ).to.equal(2);
      // Lowered below what the key holds: nothing goes until the next write.
      expect((await c.call('GET', '/v1/kv/meta/m?version=1')).status).to.equal(200);
      const put = await c.put('meta/m', '4');
      expect(put.body.version).to.equal(4);
      const list = (await c.call('GET', '/v1/kv/meta/m/versions')).body;
      expect(list.versions.map((v: { version: number }) => v.version)).to.deep.equal([3, 4]);
      expect(list.max_versions).to.equal(2);
      expect((await c.call('GET', '/v1/kv/meta/m?version=2')).status).to.equal(404);
      await c.put('meta/m', '5');
      expect(
        (await c.call('GET', '/v1/kv/meta/m/versions')).body.versions.map(
          (v: { version: number }) => v.version,
        ),
      ).to.deep.equal([4, 5]);
      const writes = auditLines(c.config.audit.dir!).filter(
        (l) => l.kind === 'request' && l.key === 'm' && l.action === 'write',
      );
      expect(writes.map((l) => [l.version, l.pruned])).to.deep.equal([
        [1, undefined],
        [2, undefined],
        [3, undefined],
        [4, [1, 2]],
        [5, [3]],
      ]);
      expect(
        auditLines(c.config.audit.dir!).some((l) => l.kind === 'intent' && l.action === 'metadata'),
      ).to.equal(true);
    });

    it('cas_required: a write that names no version is refused (428) and writes nothing; one that names it is taken; kept through delete and a new life', async () => {
      await c.put('meta/cas', 'one');
      const set = await c.call('PATCH', '/v1/kv/meta/cas', { json: { cas_required: true } });
      expect(set.status, set.text).to.equal(200);
      expect(set.body.cas_required).to.equal(true);
      const bare = await c.call('PUT', '/v1/kv/meta/cas', {
        json: { value: 'two', type: 'config' },
      });
      expect(bare.status, bare.text).to.equal(428);
      expect(bare.body.code).to.equal('precondition_required');
      expect(bare.body.detail).to.include('requires check-and-set');
      expect((await c.call('GET', '/v1/kv/meta/cas')).body.value).to.equal('one');
      expect(
        (await c.call('PUT', '/v1/kv/meta/cas?cas=7', { json: { value: 'two', type: 'config' } }))
          .status,
      ).to.equal(412);
      const named = await c.call('PUT', '/v1/kv/meta/cas', {
        headers: { 'if-match': '"1"' },
        json: { value: 'two', type: 'config' },
      });
      expect(named.status, named.text).to.equal(200);
      const list = (await c.call('GET', '/v1/kv/meta/cas/versions')).body;
      expect(list.cas_required).to.equal(true);
      expect(list.current_version).to.equal(2);
      // Deleted and written again: still required; 0 names "no live version".
      expect((await c.call('DELETE', '/v1/kv/meta/cas')).status).to.equal(204);
      expect(
        (await c.call('PUT', '/v1/kv/meta/cas', { json: { value: 'three', type: 'config' } }))
          .status,
      ).to.equal(428);
      expect(
        (await c.call('PUT', '/v1/kv/meta/cas?cas=0', { json: { value: 'three', type: 'config' } }))
          .status,
      ).to.equal(201);
      // Cleared: a bare write is taken again.
      await c.call('PATCH', '/v1/kv/meta/cas', { json: { cas_required: false } });
      expect(
        (await c.call('PUT', '/v1/kv/meta/cas', { json: { value: 'four', type: 'config' } }))
          .status,
      ).to.equal(200);
      const refused = auditLines(c.config.audit.dir!).filter(
        (l) =>
          l.kind === 'request' &&
          l.key === 'cas' &&
          (l.outcome as { status?: number } | undefined)?.status === 428,
      );
      expect(refused).to.have.length(2);
    });
  });
});

describe('verify holds over versions pruned by max_versions', function () {
  this.timeout(60_000);
  it('counts a pruned version as destroyed by the write that pruned it, not as a write missing', async () => {
    const { root, env } = serveSettings(1);
    const p = await startProcess(env);
    try {
      const put = (value: string) =>
        send(p.url, 'PUT', '/v1/kv/vm/k', root, { value, type: 'secret' });
      await put('a');
      expect(
        (await send(p.url, 'PATCH', '/v1/kv/vm/k', root, { max_versions: 1 })).status,
      ).to.equal(200);
      await put('b');
      await put('c');
    } finally {
      await p.stop();
    }
    const verify = await runCoffer(['audit', 'verify'], env);
    expect(verify.code, verify.stdout).to.equal(0);
    expect(verify.stdout).to.match(/^intact: /);
  });
});
