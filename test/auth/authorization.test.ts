import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

type Action = 'read' | 'list' | 'write' | 'delete';
type ValueType = 'config' | 'secret';

/** Tries one action on a fresh key of the given type in namespace `ns`; returns the status. */
async function attempt(
  c: TestCoffer,
  token: string,
  action: Action,
  type: ValueType,
  ns: string,
  n: number,
): Promise<number> {
  const key = `k${n}`;
  if (action !== 'write')
    expect((await c.put(`${ns}/${key}`, `v-${type}`, type)).status).to.equal(201);
  switch (action) {
    case 'read':
      return (await c.call('GET', `/v1/kv/${ns}/${key}`, { token })).status;
    case 'list': {
      const res = await c.call('GET', `/v1/kv/${ns}/`, { token });
      if (res.status !== 200) return res.status;
      return res.body.keys.includes(key) ? 200 : 403;
    }
    case 'write':
      return (await c.put(`${ns}/${key}`, 'new', type, token)).status;
    case 'delete':
      return (await c.call('DELETE', `/v1/kv/${ns}/${key}`, { token })).status;
  }
}

describe('authorization', () => {
  let c: TestCoffer;
  let counter = 0;
  before(async () => {
    const dir = tempDir();
    const configFile = join(dir, 'roles.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        roles: {
          'team-a': [
            {
              namespaces: ['team-a/*'],
              actions: ['read', 'list', 'write'],
              types: ['config', 'secret'],
            },
            { namespaces: ['shared'], actions: ['read', 'list'], types: ['config'] },
          ],
          lister: [{ namespaces: ['*'], actions: ['list'], types: ['config', 'secret'] }],
        },
      }),
    );
    c = await startTestCoffer({ env: { COFFER_CONFIG: configFile } });
  });
  after(async () => {
    await c.close();
  });

  const expected: Record<string, Record<Action, ValueType[]>> = {
    admin: {
      read: ['config', 'secret'],
      list: ['config', 'secret'],
      write: ['config', 'secret'],
      delete: ['config', 'secret'],
    },
    writer: {
      read: ['config', 'secret'],
      list: ['config', 'secret'],
      write: ['config', 'secret'],
      delete: [],
    },
    reader: { read: ['config', 'secret'], list: ['config', 'secret'], write: [], delete: [] },
    'config-reader': { read: ['config'], list: ['config'], write: [], delete: [] },
  };

  for (const [role, allowed] of Object.entries(expected)) {
    for (const action of ['read', 'list', 'write', 'delete'] as const) {
      for (const type of ['config', 'secret'] as const) {
        const may = allowed[action].includes(type);
        it(`${role} ${may ? 'may' : 'may not'} ${action} ${type} values`, async () => {
          const token = await c.token({ role });
          const status = await attempt(c, token, action, type, `m/${role}`, counter++);
          const success = { read: 200, list: 200, write: 201, delete: 204 }[action];
          expect(status).to.equal(may ? success : 403);
        });
      }
    }
  }

  describe('config-reader and secret-typed keys', () => {
    let token: string;
    before(async () => {
      token = await c.token({ role: 'config-reader' });
      await c.put('cr/flipped', 'was config', 'config');
      await c.put('cr/flipped', 'now secret', 'secret');
      await c.put('cr/back', 'was secret', 'secret');
      await c.put('cr/back', 'now config', 'config');
      await c.put('cr/plain', 'config', 'config');
      await c.put('cr/hidden/only', 'secret', 'secret');
      await c.put('cr/mixed/s', 'secret', 'secret');
      await c.put('cr/mixed/deep/c', 'config', 'config');
    });

    it('cannot see a key whose latest version is secret: value, versions and every version are 403', async () => {
      for (const path of [
        '/v1/kv/cr/flipped',
        '/v1/kv/cr/flipped/versions',
        '/v1/kv/cr/flipped?version=1',
        '/v1/kv/cr/flipped?version=2',
      ]) {
        expect((await c.call('GET', path, { token })).status, path).to.equal(403);
      }
    });

    it('reads a config key, but not its older secret versions', async () => {
      expect((await c.call('GET', '/v1/kv/cr/back', { token })).body.value).to.equal('now config');
      expect((await c.call('GET', '/v1/kv/cr/back?version=1', { token })).status).to.equal(403);
      expect((await c.call('GET', '/v1/kv/cr/back/versions', { token })).status).to.equal(200);
    });

    it('does not see secret keys or namespaces holding only secrets in listings', async () => {
      const res = await c.call('GET', '/v1/kv/cr', { token });
      expect(res.body.keys).to.deep.equal(['back', 'plain']);
      expect(res.body.namespaces).to.deep.equal(['mixed']);
      const hidden = await c.call('GET', '/v1/kv/cr/hidden/', { token });
      expect(hidden.status).to.equal(200);
      expect(hidden.body).to.deep.include({ keys: [], namespaces: [] });
    });
  });

  describe('legacy scopes', () => {
    before(async () => {
      for (const path of ['p/k', 'p/q/k', 'p/q/r/k', 'pp/k', 'other/k', 'x/k'])
        await c.put(path, 'v', 'secret');
    });

    it('* matches every namespace', async () => {
      const token = await c.token({ scopes: [{ namespace: '*', read: true }] });
      for (const path of ['p/k', 'other/k', 'p/q/r/k'])
        expect((await c.call('GET', `/v1/kv/${path}`, { token })).status, path).to.equal(200);
      expect((await c.put('p/new', 'v', 'config', token)).status).to.equal(403);
    });

    it('p/* matches p and everything beneath it, not pp', async () => {
      const token = await c.token({ scopes: [{ namespace: 'p/*', read: true, write: true }] });
      for (const path of ['p/k', 'p/q/k', 'p/q/r/k'])
        expect((await c.call('GET', `/v1/kv/${path}`, { token })).status, path).to.equal(200);
      for (const path of ['pp/k', 'other/k'])
        expect((await c.call('GET', `/v1/kv/${path}`, { token })).status, path).to.equal(403);
      expect((await c.put('p/q/new', 'v', 'secret', token)).status).to.equal(201);
      expect((await c.call('DELETE', '/v1/kv/p/q/new', { token })).status).to.equal(204);
    });

    it('an exact namespace matches only itself', async () => {
      const token = await c.token({ scopes: [{ namespace: 'p/q', read: true }] });
      expect((await c.call('GET', '/v1/kv/p/q/k', { token })).status).to.equal(200);
      expect((await c.call('GET', '/v1/kv/p/k', { token })).status).to.equal(403);
      expect((await c.call('GET', '/v1/kv/p/q/r/k', { token })).status).to.equal(403);
    });

    it('read covers value, version, versions and list; write covers PUT and DELETE', async () => {
      const reader = await c.token({ scopes: [{ namespace: 'x', read: true }] });
      for (const path of [
        '/v1/kv/x/k',
        '/v1/kv/x/k?version=1',
        '/v1/kv/x/k/versions',
        '/v1/kv/x',
      ]) {
        expect((await c.call('GET', path, { token: reader })).status, path).to.equal(200);
      }
      expect((await c.put('x/k', 'v', 'secret', reader)).status).to.equal(403);
      expect((await c.call('DELETE', '/v1/kv/x/k', { token: reader })).status).to.equal(403);

      const writer = await c.token({ scopes: [{ namespace: 'x', write: true }] });
      expect((await c.call('GET', '/v1/kv/x/k', { token: writer })).status).to.equal(403);
      expect((await c.call('GET', '/v1/kv/x', { token: writer })).status).to.equal(403);
      expect((await c.put('x/k2', 'v', 'secret', writer)).status).to.equal(201);
      expect((await c.call('DELETE', '/v1/kv/x/k2', { token: writer })).status).to.equal(204);
    });

    it('a listing above a scope shows only the way down to it', async () => {
      const token = await c.token({ scopes: [{ namespace: 'p/q/*', read: true }] });
      const res = await c.call('GET', '/v1/kv/p', { token });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ keys: [], namespaces: ['q'] });
      expect((await c.call('GET', '/v1/kv/other', { token })).status).to.equal(403);
    });
  });

  describe('custom roles from the configuration', () => {
    it('grant what their rules say and nothing else', async () => {
      const token = await c.token({ role: 'team-a' });
      expect((await c.put('team-a/svc/db', 'pw', 'secret', token)).status).to.equal(201);
      expect((await c.call('GET', '/v1/kv/team-a/svc/db', { token })).status).to.equal(200);
      expect((await c.call('DELETE', '/v1/kv/team-a/svc/db', { token })).status).to.equal(403);
      await c.put('shared/cfg', 'v', 'config');
      await c.put('shared/pw', 'v', 'secret');
      expect((await c.call('GET', '/v1/kv/shared/cfg', { token })).status).to.equal(200);
      expect((await c.call('GET', '/v1/kv/shared/pw', { token })).status).to.equal(403);
      expect((await c.put('shared/cfg', 'v', 'config', token)).status).to.equal(403);
      expect((await c.put('team-b/x', 'v', 'config', token)).status).to.equal(403);
    });

    it('can list without reading', async () => {
      const token = await c.token({ role: 'lister' });
      await c.put('audited/s', 'v', 'secret');
      expect((await c.call('GET', '/v1/kv/audited', { token })).body.keys).to.deep.equal(['s']);
      expect((await c.call('GET', '/v1/kv/audited/s/versions', { token })).status).to.equal(200);
      expect((await c.call('GET', '/v1/kv/audited/s', { token })).status).to.equal(403);
    });
  });

  describe('forbidden reveals nothing', () => {
    it('gives the same 403 for existing and missing keys outside the grant', async () => {
      const token = await c.token({ scopes: [{ namespace: 'mine', read: true, write: true }] });
      await c.put('theirs/exists', 'v', 'secret');
      const statuses = [];
      const details: string[] = [];
      for (const [method, path] of [
        ['GET', '/v1/kv/theirs/exists'],
        ['GET', '/v1/kv/theirs/missing'],
        ['GET', '/v1/kv/theirs/exists?version=1'],
        ['GET', '/v1/kv/theirs/missing?version=1'],
        ['GET', '/v1/kv/theirs/exists/versions'],
        ['GET', '/v1/kv/theirs/missing/versions'],
        ['DELETE', '/v1/kv/theirs/exists'],
        ['DELETE', '/v1/kv/theirs/missing'],
      ] as const) {
        const res = await c.call(method, path, { token });
        statuses.push(res.status);
        details.push(res.body.detail);
        expect(res.body.detail).to.match(
          /^this token is not allowed to (read or list|read|list|delete) in theirs$/,
        );
      }
      expect(statuses.every((s) => s === 403)).to.equal(true);
      // An existing and a missing key get the same answer, word for word.
      for (let i = 0; i < details.length; i += 2) expect(details[i]).to.equal(details[i + 1]);
      expect((await c.put('theirs/exists', 'v', 'secret', token)).status).to.equal(403);
      expect((await c.call('GET', '/v1/kv/theirs/exists')).body.version).to.equal(1);
    });

    it('does not let a writer of one type overwrite a key of the other type', async () => {
      const dir = tempDir();
      const file = join(dir, 'roles.json');
      writeFileSync(
        file,
        JSON.stringify({
          roles: {
            'config-writer': [
              { namespaces: ['*'], actions: ['read', 'list', 'write'], types: ['config'] },
            ],
          },
        }),
      );
      const other = await startTestCoffer({ env: { COFFER_CONFIG: file } });
      try {
        const token = await other.token({ role: 'config-writer' });
        await other.put('t/pw', 'secret', 'secret');
        expect((await other.put('t/pw', 'public now', 'config', token)).status).to.equal(403);
        expect((await other.put('t/cfg', 'ok', 'config', token)).status).to.equal(201);
        expect((await other.put('t/cfg2', 'no', 'secret', token)).status).to.equal(403);
      } finally {
        await other.close();
      }
    });
  });
});
