import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { onEachBackend } from '../support/each-backend.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

describe('listing', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
    for (const path of [
      'shop/api_key',
      'shop/Zeta',
      'shop/alpha',
      'shop/db/password',
      'shop/db/user',
      'shop/cache/deep/x',
      'shop/versions/k',
      'shop-2/k',
      'solo/only',
    ]) {
      expect(
        (await c.put(path, `value of ${path}`, path.endsWith('password') ? 'secret' : 'config'))
          .status,
      ).to.equal(201);
    }
  });
  after(async () => {
    await c.close();
  });

  const list = async (
    path: string,
  ): Promise<{
    status: number;
    body: { namespace: string; keys: string[]; namespaces: string[]; next_cursor: string | null };
  }> => c.call('GET', path);

  it('lists a one-segment namespace: bare key names and child segments, sorted by code point', async () => {
    const res = await list('/v1/kv/shop');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      kind: 'listing',
      namespace: 'shop',
      keys: ['Zeta', 'alpha', 'api_key'],
      namespaces: ['cache', 'db', 'versions'],
      next_cursor: null,
    });
  });

  it('lists with a trailing slash and with list=true', async () => {
    const slash = await list('/v1/kv/shop/db/');
    expect(slash.body).to.deep.equal({
      kind: 'listing',
      namespace: 'shop/db',
      keys: ['password', 'user'],
      namespaces: [],
      next_cursor: null,
    });
    const flag = await list('/v1/kv/shop/db?list=true');
    expect(flag.body).to.deep.equal(slash.body);
    expect((await list('/v1/kv/shop/db?list=yes')).status).to.equal(400);
  });

  it('reads a key when the last segment names one, else lists the namespace, else 404', async () => {
    const key = await c.call('GET', '/v1/kv/shop/alpha');
    expect(key.body.value).to.equal('value of shop/alpha');
    const ns = await list('/v1/kv/shop/cache');
    expect(ns.body).to.deep.equal({
      kind: 'listing',
      namespace: 'shop/cache',
      keys: [],
      namespaces: ['deep'],
      next_cursor: null,
    });
    expect((await c.call('GET', '/v1/kv/shop/nothing')).status).to.equal(404);
  });

  it("audits a listing reached from a key's path as the namespace's listing, with no key", async () => {
    const ns = await c.call('GET', '/v1/kv/shop/cache?limit=5');
    expect(ns.body.kind).to.equal('listing');
    const entry = auditLines(c.config.audit.dir!).find(
      (l) => l.kind === 'request' && l.request_id === ns.headers.get('x-request-id'),
    )!;
    expect(entry).to.include({ action: 'list', namespace: 'shop/cache' });
    expect(entry).to.not.have.property('key');
  });

  it('lists a namespace named versions only with a trailing slash', async () => {
    expect((await c.call('GET', '/v1/kv/shop/versions')).status).to.equal(400);
    const res = await list('/v1/kv/shop/versions/');
    expect(res.body).to.deep.equal({
      kind: 'listing',
      namespace: 'shop/versions',
      keys: ['k'],
      namespaces: [],
      next_cursor: null,
    });
  });

  it('lists an empty or missing namespace as 200 with empty arrays', async () => {
    const res = await list('/v1/kv/empty');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      kind: 'listing',
      namespace: 'empty',
      keys: [],
      namespaces: [],
      next_cursor: null,
    });
  });

  it('does not mix up a namespace with one that shares its prefix', async () => {
    expect((await list('/v1/kv/shop-2')).body.keys).to.deep.equal(['k']);
    expect((await list('/v1/kv/shop')).body.namespaces).to.not.include('shop-2');
  });

  it('drops a child namespace once its last key is deleted', async () => {
    await c.put('gone/child/k', 'x', 'config');
    expect((await list('/v1/kv/gone')).body.namespaces).to.deep.equal(['child']);
    await c.call('DELETE', '/v1/kv/gone/child/k');
    expect((await list('/v1/kv/gone')).body).to.deep.equal({
      kind: 'listing',
      namespace: 'gone',
      keys: [],
      namespaces: [],
      next_cursor: null,
    });
  });

  it('pages keys then namespaces with exact page sizes, each name once, in order', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const res = await list(`/v1/kv/shop/?limit=2${q}`);
      expect(res.status).to.equal(200);
      const size = res.body.keys.length + res.body.namespaces.length;
      if (res.body.next_cursor !== null) expect(size).to.equal(2);
      seen.push(...res.body.keys.map((k) => `k:${k}`), ...res.body.namespaces.map((n) => `n:${n}`));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen).to.deep.equal(['k:Zeta', 'k:alpha', 'k:api_key', 'n:cache', 'n:db', 'n:versions']);
    expect(pages).to.equal(3);
  });

  it('pages a namespace of 2,500 keys at the default and maximum limits', async () => {
    await Promise.all(
      Array.from({ length: 2500 }, (_, i) =>
        c.put(`big/k${String(i).padStart(4, '0')}`, 'v', 'config'),
      ),
    );
    const first = await list('/v1/kv/big');
    expect(first.body.keys).to.have.length(1000);
    expect(first.body.next_cursor).to.be.a('string');
    const all = await list('/v1/kv/big?limit=10000');
    expect(all.body.keys).to.have.length(2500);
    expect(all.body.next_cursor).to.equal(null);
  });

  it('lists the top-level namespaces at GET /v1/kv/, paged, each only for a caller who could list something in it', async () => {
    const all = (await list('/v1/kv/')).body;
    expect(all).to.include({ namespace: '', next_cursor: null });
    expect(all.keys).to.deep.equal([]);
    // Other tests here add namespaces of their own; these are this one's, in code-point order.
    expect(all.namespaces.filter((n) => ['shop', 'shop-2', 'solo'].includes(n))).to.deep.equal([
      'shop',
      'shop-2',
      'solo',
    ]);
    expect((await list('/v1/kv')).body).to.deep.equal(all);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(`/v1/kv/?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.body.namespaces).to.have.length(1);
      seen.push(...page.body.namespaces);
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    expect(seen).to.deep.equal(all.namespaces);

    // Scopes: only what lies in or beneath a granted namespace, and nothing is refused.
    const scoped = await c.token({ scopes: [{ namespace: 'shop/db', read: true }] });
    const asScoped = await c.call('GET', '/v1/kv/', { token: scoped });
    expect(asScoped.status).to.equal(200);
    expect(asScoped.body.namespaces).to.deep.equal(['shop']);
    // A role that may list config values only: solo/only and shop-2/k are config, shop's keys mostly too.
    await c.put('vault-only/s', 'x', 'secret');
    const configReader = await c.token({
      scopes: [{ namespace: '*', read: true }],
    });
    expect((await c.call('GET', '/v1/kv/', { token: configReader })).body.namespaces).to.include(
      'vault-only',
    );
    const nothing = await c.token({ scopes: [{ namespace: 'elsewhere', write: true }] });
    expect((await c.call('GET', '/v1/kv/', { token: nothing })).body.namespaces).to.deep.equal([]);
    // A cursor of the root listing is refused by a namespace's, and the other way round.
    const page = await list('/v1/kv/?limit=1');
    expect((await list(`/v1/kv/shop/?cursor=${page.body.next_cursor}`)).status).to.equal(400);
    const audited = await c.call('GET', '/v1/sys/audit?action=list&limit=1000');
    expect(
      audited.body.entries.some(
        (e: { route?: string; namespace?: string; outcome?: { status: number } }) =>
          e.route === '/v1/kv/{path}' && e.namespace === undefined && e.outcome?.status === 200,
      ),
    ).to.equal(true);
  });

  it('refuses bad limits and bad or foreign cursors', async () => {
    for (const limit of ['0', '10001', 'x', '-1', ''])
      expect((await list(`/v1/kv/shop/?limit=${limit}`)).status, limit).to.equal(400);
    const page = await list('/v1/kv/shop/?limit=1');
    expect((await list(`/v1/kv/shop-2/?cursor=${page.body.next_cursor}`)).status).to.equal(400);
    expect((await list('/v1/kv/shop/?cursor=not-a-cursor')).status).to.equal(400);
    expect((await list('/v1/kv/shop/?version=1')).status).to.equal(400);
  });

  it("with details=true gives each listed key's latest version, type and time in the same call, no value, only for keys the caller may list", async () => {
    await c.put('shop/alpha', 'second', 'config');
    const res = await c.call('GET', '/v1/kv/shop?details=true');
    expect(res.status).to.equal(200);
    const { versions } = (await c.call('GET', '/v1/kv/shop/alpha/versions')).body;
    expect(res.body.keys).to.deep.equal(['Zeta', 'alpha', 'api_key']);
    expect(res.body.details.map((d: { key: string }) => d.key)).to.deep.equal(res.body.keys);
    expect(res.body.details[1]).to.deep.equal({
      key: 'alpha',
      version: 2,
      type: 'config',
      created_at: versions[1].created_at,
    });
    expect(JSON.stringify(res.body)).to.not.include('second');
    // One audit entry for the page, a listing.
    const audited = await c.call(
      'GET',
      `/v1/sys/audit?request_id=${res.headers.get('x-request-id')}`,
    );
    expect(audited.body.entries.map((e: { action: string }) => e.action)).to.deep.equal(['list']);
    // On a key's path it lists, as cursor and limit do; a caller sees details of what it may list only.
    const implied = await c.call('GET', '/v1/kv/shop/db?details=true');
    expect(implied.body).to.include({ kind: 'listing', namespace: 'shop/db' });
    expect(implied.body.details.map((d: { key: string }) => d.key)).to.deep.equal([
      'password',
      'user',
    ]);
    const configs = await c.token({ role: 'config-reader' });
    const asConfigs = await c.call('GET', '/v1/kv/shop/db?details=true', { token: configs });
    expect(asConfigs.body.keys).to.deep.equal(['user']);
    expect(asConfigs.body.details.map((d: { type: string }) => d.type)).to.deep.equal(['config']);
    // Without it, no details; where it cannot apply, 400 naming it.
    expect((await list('/v1/kv/shop')).body).to.not.have.property('details');
    for (const path of [
      '/v1/kv/?details=true',
      '/v1/kv/shop?details=true&values=true',
      '/v1/kv/shop/alpha?details=true&version=1',
      '/v1/kv/shop/alpha/versions?details=true',
      '/v1/kv/shop?details=maybe',
    ]) {
      const refused = await c.call('GET', path);
      expect(refused.status, path).to.equal(400);
      expect(JSON.stringify(refused.body.errors), path).to.include('details');
    }
  });
});

describe('listing by name prefix (?prefix=)', () => {
  onEachBackend((start) => {
    let c: TestCoffer;
    before(async () => {
      c = await start();
      for (const path of [
        'pfx/db_host',
        'pfx/db_user',
        'pfx/dbx',
        'pfx/api',
        'pfx/Db_upper',
        'pfx/db/inner/k',
        'pfx/dba/k',
        'pfx/cache/k',
        'pfy/k',
        'other/k',
      ])
        expect((await c.put(path, 'v', 'config')).status).to.equal(201);
    });
    after(async () => {
      await c?.close();
    });
    const names = (body: { keys: string[]; namespaces: string[] }) => [
      ...body.keys.map((k) => `k:${k}`),
      ...body.namespaces.map((n) => `n:${n}`),
    ];

    it('lists only the keys and child namespaces whose names start with it, case-sensitive', async () => {
      const res = await c.call('GET', '/v1/kv/pfx/?prefix=db');
      expect(res.status).to.equal(200);
      expect(names(res.body)).to.deep.equal(['k:db_host', 'k:db_user', 'k:dbx', 'n:db', 'n:dba']);
      expect(res.body.next_cursor).to.equal(null);
      // Without a marker, a prefix lists the path as a namespace, as limit and cursor do.
      expect(names((await c.call('GET', '/v1/kv/pfx?prefix=db_')).body)).to.deep.equal([
        'k:db_host',
        'k:db_user',
      ]);
      expect(names((await c.call('GET', '/v1/kv/pfx/?prefix=zz')).body)).to.deep.equal([]);
      const top = (await c.call('GET', '/v1/kv/?prefix=pf')).body;
      expect(top.namespaces).to.deep.equal(['pfx', 'pfy']);
    });

    it('pages within the prefix; a cursor belongs to its prefix', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
        const res = await c.call('GET', `/v1/kv/pfx/?prefix=db&limit=2${q}`);
        expect(res.status).to.equal(200);
        seen.push(...names(res.body));
        cursor = res.body.next_cursor;
        pages++;
      } while (cursor !== null && pages < 10);
      expect(seen).to.deep.equal(['k:db_host', 'k:db_user', 'k:dbx', 'n:db', 'n:dba']);
      expect(pages).to.equal(3);
      const page = (await c.call('GET', '/v1/kv/pfx/?prefix=db&limit=1')).body;
      for (const other of ['', '&prefix=d', '&prefix=dbx'])
        expect(
          (await c.call('GET', `/v1/kv/pfx/?limit=1&cursor=${page.next_cursor}${other}`)).status,
          other,
        ).to.equal(400);
      const unprefixed = (await c.call('GET', '/v1/kv/pfx/?limit=1')).body;
      expect(
        (await c.call('GET', `/v1/kv/pfx/?prefix=db&cursor=${unprefixed.next_cursor}`)).status,
      ).to.equal(400);
    });

    it('shows a caller only what it may list, and refuses a bad prefix or one that does not apply', async () => {
      const scoped = await c.token({ scopes: [{ namespace: 'pfx/db/*', read: true }] });
      const asScoped = await c.call('GET', '/v1/kv/pfx/?prefix=d', { token: scoped });
      expect(asScoped.status).to.equal(200);
      expect(names(asScoped.body)).to.deep.equal(['n:db']);
      for (const bad of ['', 'a%2Fb', 'a%00', 'x'.repeat(129), '%C3%A9']) {
        const res = await c.call('GET', `/v1/kv/pfx/?prefix=${bad}`);
        expect(res.status, bad).to.equal(400);
        expect(res.body.errors[0]).to.include({ field: 'prefix', in: 'query' });
      }
      expect((await c.call('GET', '/v1/kv/pfx/?values=true&prefix=db')).status).to.equal(400);
      expect((await c.call('GET', '/v1/kv/pfx/api?version=1&prefix=a')).status).to.equal(400);
      // A version list takes no listing parameter (it is not the namespace pfx/api/versions).
      for (const q of ['prefix=a', 'limit=1', 'cursor=x'])
        expect((await c.call('GET', `/v1/kv/pfx/api/versions?${q}`)).status, q).to.equal(400);
      expect((await c.call('GET', '/v1/kv/pfx/versions?prefix=a')).status).to.equal(400);
    });
  });
});
