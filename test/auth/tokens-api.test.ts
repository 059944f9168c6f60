import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

const TOKEN_SHAPE = /^cfr_[0-9A-Za-z]{16}_[0-9A-Za-z]{43}$/;

describe('token API', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer({ env: { COFFER_DEFAULT_TTL: '3600', COFFER_MAX_TTL: '7200' } });
  });
  after(async () => {
    await c.close();
  });

  describe('POST /v1/auth/token', () => {
    it('creates a role token: 201 with the value shown once, default TTL applied', async () => {
      const res = await c.call('POST', '/v1/auth/token', {
        json: { role: 'reader', metadata: { name: 'ci', description: 'build bot' } },
      });
      expect(res.status).to.equal(201);
      expect(res.body.token).to.match(TOKEN_SHAPE);
      expect(res.body.token.slice(4, 20)).to.equal(res.body.id);
      expect(res.body).to.include({ role: 'reader', scopes: null, expires_in: 3600 });
      expect(res.body.metadata).to.deep.equal({ name: 'ci', description: 'build bot' });
      expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).to.equal(3_600_000);
      expect((await c.call('GET', '/v1/auth/me', { token: res.body.token })).status).to.equal(200);
    });

    it('creates a scoped token, echoing omitted read/write as false', async () => {
      const res = await c.call('POST', '/v1/auth/token', {
        json: {
          scopes: [
            { namespace: 'app/*', read: true },
            { namespace: 'x', write: true },
          ],
          expires_in: 60,
        },
      });
      expect(res.status).to.equal(201);
      expect(res.body.role).to.equal(null);
      expect(res.body.scopes).to.deep.equal([
        { namespace: 'app/*', read: true, write: false },
        { namespace: 'x', read: false, write: true },
      ]);
      expect(res.body.metadata).to.deep.equal({});
    });

    it('refuses invalid requests with 400 and the schema errors', async () => {
      const cases: Record<string, unknown> = {
        neither: { expires_in: 60 },
        both: { role: 'reader', scopes: [{ namespace: '*', read: true }] },
        unknownRole: { role: 'superuser' },
        rootRole: { role: 'root' },
        zeroTtl: { role: 'reader', expires_in: 0 },
        overMaxTtl: { role: 'reader', expires_in: 7201 },
        fractionTtl: { role: 'reader', expires_in: 1.5 },
        stringTtl: { role: 'reader', expires_in: '60' },
        unknownField: { role: 'reader', colour: 'red' },
        badMetadataField: { role: 'reader', metadata: { '1owner': 'me' } },
        nonTextMetadata: { role: 'reader', metadata: { owner: 5 } },
        tooManyMetadata: {
          role: 'reader',
          metadata: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`f${i}`, 'x'])),
        },
        longName: { role: 'reader', metadata: { name: 'n'.repeat(129) } },
        longDescription: { role: 'reader', metadata: { description: 'd'.repeat(1025) } },
        emptyScopes: { scopes: [] },
        scopeGrantsNothing: { scopes: [{ namespace: 'a' }] },
        scopeBadStar: { scopes: [{ namespace: 'a*', read: true }] },
        scopeStarMiddle: { scopes: [{ namespace: 'a/*/b', read: true }] },
        scopeBadNamespace: { scopes: [{ namespace: 'a//b', read: true }] },
        scopeUnknownField: { scopes: [{ namespace: 'a', read: true, admin: true }] },
      };
      for (const [name, json] of Object.entries(cases)) {
        const res = await c.call('POST', '/v1/auth/token', { json });
        expect(res.status, name).to.equal(400);
        expect(res.body.code, name).to.equal('invalid_request');
        expect(res.body.detail, name).to.be.a('string').and.not.be.empty;
      }
      const named = await c.call('POST', '/v1/auth/token', {
        json: { role: 'reader', colour: 'red', size: 1 },
      });
      expect(named.body.errors.map((e: { field: string }) => e.field)).to.include.members([
        '/colour',
        '/size',
      ]);
    });

    it('accepts metadata at its length limits', async () => {
      const res = await c.call('POST', '/v1/auth/token', {
        json: {
          role: 'reader',
          metadata: { name: 'n'.repeat(128), description: 'd'.repeat(1024) },
        },
      });
      expect(res.status).to.equal(201);
    });

    it('is for root and for tokens whose role grants create_tokens: a writer may not', async () => {
      const writer = await c.token({ role: 'writer' });
      const res = await c.call('POST', '/v1/auth/token', {
        token: writer,
        json: { role: 'reader' },
      });
      expect(res.status).to.equal(403);
      expect(res.body.code).to.equal('forbidden');
      expect((await c.call('GET', '/v1/auth/tokens', { token: writer })).status).to.equal(403);
      expect(
        (await c.call('DELETE', `/v1/auth/token/${writer}`, { token: writer })).status,
      ).to.equal(403);
    });

    it('takes free metadata fields, shown in listings; the total is bounded', async () => {
      const res = await c.call('POST', '/v1/auth/token', {
        json: { role: 'reader', metadata: { name: 'ci', team: 'payments', 'cost.centre': '42' } },
      });
      expect(res.status).to.equal(201);
      expect(res.body.metadata).to.deep.equal({
        name: 'ci',
        team: 'payments',
        'cost.centre': '42',
      });
      const listed = (await c.call('GET', '/v1/auth/tokens')).body.tokens.find(
        (t: { id: string }) => t.id === res.body.id,
      );
      expect(listed.metadata.team).to.equal('payments');
      const big = Object.fromEntries(
        Array.from({ length: 8 }, (_, i) => [`f${i}`, 'x'.repeat(1000)]),
      );
      const tooBig = await c.call('POST', '/v1/auth/token', {
        json: { role: 'reader', metadata: big },
      });
      expect(tooBig.status).to.equal(400);
      expect(tooBig.body.errors.map((e: { field: string }) => e.field)).to.include('/metadata');
    });
  });

  describe('GET /v1/auth/tokens and DELETE /v1/auth/token/{token}', () => {
    it('lists active tokens without values or hashes; all=true adds revoked ones with their status', async () => {
      const keep = await c.call('POST', '/v1/auth/token', {
        json: { role: 'writer', metadata: { name: 'keep' } },
      });
      const drop = await c.call('POST', '/v1/auth/token', {
        json: { role: 'writer', metadata: { name: 'drop' } },
      });
      expect((await c.call('DELETE', `/v1/auth/token/${drop.body.token}`)).status).to.equal(204);

      const active = await c.call('GET', '/v1/auth/tokens');
      expect(active.status).to.equal(200);
      const ids = active.body.tokens.map((t: { id: string }) => t.id);
      expect(ids).to.include(keep.body.id).and.not.include(drop.body.id);
      const entry = active.body.tokens.find((t: { id: string }) => t.id === keep.body.id);
      expect(entry).to.deep.equal({
        id: keep.body.id,
        role: 'writer',
        scopes: null,
        metadata: { name: 'keep' },
        created_at: keep.body.created_at,
        expires_at: keep.body.expires_at,
        status: 'active',
      });
      expect(active.text).to.not.include(keep.body.token.slice(21)).and.not.include('$argon2');

      const all = await c.call('GET', '/v1/auth/tokens?all=true');
      expect(all.body.tokens.find((t: { id: string }) => t.id === drop.body.id).status).to.equal(
        'revoked',
      );
      expect((await c.call('GET', '/v1/auth/tokens?all=maybe')).status).to.equal(400);
    });

    it('revokes by value or by id; the next request with it fails; again is 204; unknown is 404', async () => {
      const byValue = await c.token({ role: 'reader' });
      expect((await c.call('GET', '/v1/auth/me', { token: byValue })).status).to.equal(200);
      expect((await c.call('DELETE', `/v1/auth/token/${byValue}`)).status).to.equal(204);
      const after = await c.call('GET', '/v1/auth/me', { token: byValue });
      expect(after.status).to.equal(401);
      expect(after.headers.get('www-authenticate')).to.match(/^Bearer/);

      const byId = await c.call('POST', '/v1/auth/token', { json: { role: 'reader' } });
      await c.call('GET', '/v1/auth/me', { token: byId.body.token });
      expect((await c.call('DELETE', `/v1/auth/token/${byId.body.id}`)).status).to.equal(204);
      expect((await c.call('GET', '/v1/kv/any/thing', { token: byId.body.token })).status).to.equal(
        401,
      );
      expect((await c.call('DELETE', `/v1/auth/token/${byId.body.id}`)).status).to.equal(204);

      expect((await c.call('DELETE', '/v1/auth/token/AAAAAAAAAAAAAAAA')).status).to.equal(404);
      expect((await c.call('DELETE', '/v1/auth/token/not-a-token')).status).to.equal(404);
    });

    it('refuses to revoke the root token, by value or by the id /v1/auth/me reports for it', async () => {
      expect((await c.call('GET', '/v1/auth/me')).body.id).to.equal('root');
      for (const subject of [c.rootToken, 'root']) {
        const res = await c.call('DELETE', `/v1/auth/token/${subject}`);
        expect(res.status).to.equal(400);
        expect(res.body.detail).to.match(/the root token cannot be revoked/);
      }
      expect((await c.call('GET', '/v1/auth/me')).status).to.equal(200);
    });

    it('lets any token revoke itself (POST /v1/auth/token/revoke-self), audited, but never the root token', async () => {
      const scoped = await c.call('POST', '/v1/auth/token', {
        json: { scopes: [{ namespace: 'mine', read: true }] },
      });
      const own = scoped.body.token as string;
      const res = await c.call('POST', '/v1/auth/token/revoke-self', { token: own });
      expect(res.status).to.equal(204);
      expect((await c.call('GET', '/v1/auth/me', { token: own })).status).to.equal(401);
      const tokens = (await c.call('GET', '/v1/auth/tokens?all=true')).body.tokens;
      expect(tokens.find((t: { id: string }) => t.id === scoped.body.id).status).to.equal(
        'revoked',
      );
      const line = auditLines(c.config.audit.dir!).find(
        (l) => l.kind === 'request' && l.request_id === res.headers.get('x-request-id'),
      );
      expect(line).to.deep.include({
        action: 'token.revoke',
        token_id: scoped.body.id,
        subject_token_id: scoped.body.id,
      });
      const event = auditLines(c.config.audit.dir!).find(
        (l) => l.kind === 'event' && l.event === 'token.revoke' && l.token_id === scoped.body.id,
      );
      expect(event).to.deep.include({ by: scoped.body.id });

      const root = await c.call('POST', '/v1/auth/token/revoke-self');
      expect(root.status).to.equal(400);
      expect(root.body.detail).to.match(/the root token cannot be revoked/);
      expect((await c.call('GET', '/v1/auth/me')).status).to.equal(200);
      expect((await c.call('POST', '/v1/auth/token/revoke-self', { token: null })).status).to.equal(
        401,
      );
    });

    it('renews the calling token by its lifetime, never past creation + max TTL, and the renewed token outlives its first expiry', async function () {
      this.timeout(20_000);
      const short = await startTestCoffer({
        env: { COFFER_MAX_TTL: '4', COFFER_DEFAULT_TTL: '2' },
      });
      try {
        const made = await short.call('POST', '/v1/auth/token', {
          json: { role: 'reader', expires_in: 2 },
        });
        const own = made.body.token as string;
        const created = Date.parse(made.body.created_at);
        expect(Date.parse(made.body.expires_at) - created).to.equal(2000);
        await eventually(() => Date.now() >= created + 1000, { what: 'a second after creation' });
        const renewed = await short.call('POST', '/v1/auth/token/renew', { token: own });
        expect(renewed.status).to.equal(200);
        expect(renewed.body.id).to.equal(made.body.id);
        expect(renewed.body).not.to.have.property('token');
        const until = Date.parse(renewed.body.expires_at);
        expect(until - created).to.be.within(2900, 3300); // now (≈ +1 s) + its 2-s lifetime
        expect((await short.call('GET', '/v1/auth/me', { token: own })).body.expires_at).to.equal(
          renewed.body.expires_at,
        );
        // Past its first expiry it still works; renewed again, it stops at creation + max TTL (4 s).
        await eventually(() => Date.now() > Date.parse(made.body.expires_at) + 200, {
          what: 'the first expiry passed',
        });
        expect((await short.call('GET', '/v1/auth/me', { token: own })).status).to.equal(200);
        const capped = await short.call('POST', '/v1/auth/token/renew', { token: own });
        expect(Date.parse(capped.body.expires_at) - created).to.equal(4000);
        await eventually(
          async () => (await short.call('GET', '/v1/auth/me', { token: own })).status === 401,
          { timeout: 5000 },
        );
        expect((await short.call('POST', '/v1/auth/token/renew', { token: own })).status).to.equal(
          401,
        );
        const events = auditLines(short.config.audit.dir!).filter(
          (l) => l.kind === 'event' && l.event === 'token.renew' && l.token_id === made.body.id,
        );
        expect(events).to.have.length(2);
        const root = await short.call('POST', '/v1/auth/token/renew');
        expect(root.status).to.equal(400);
      } finally {
        await short.close();
      }
    });

    it('records one token.revoke event however often a token is revoked', async () => {
      const created = await c.call('POST', '/v1/auth/token', { json: { role: 'reader' } });
      for (let i = 0; i < 3; i++)
        expect((await c.call('DELETE', `/v1/auth/token/${created.body.id}`)).status).to.equal(204);
      const events = auditLines(c.config.audit.dir!).filter(
        (l) => l.kind === 'event' && l.event === 'token.revoke' && l.token_id === created.body.id,
      );
      expect(events).to.have.length(1);
    });
  });

  describe('expiry', () => {
    it('a 1-second token works at once and fails after a second', async function () {
      this.timeout(5000);
      const token = await c.token({ role: 'reader', expires_in: 1 });
      expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(200);
      await eventually(async () => (await c.call('GET', '/v1/auth/me', { token })).status === 401, {
        timeout: 2000,
        interval: 100,
        what: 'the token expired',
      });
      const all = await c.call('GET', '/v1/auth/tokens?all=true');
      expect(
        all.body.tokens.find((t: { id: string }) => t.id === token.slice(4, 20)).status,
      ).to.equal('expired');
      const active = await c.call('GET', '/v1/auth/tokens');
      expect(active.body.tokens.map((t: { id: string }) => t.id)).to.not.include(
        token.slice(4, 20),
      );
    });
  });

  describe('GET /v1/auth/me', () => {
    it('describes root', async () => {
      const res = await c.call('GET', '/v1/auth/me');
      expect(res.body).to.deep.equal({
        id: 'root',
        is_root: true,
        role: 'root',
        scopes: null,
        metadata: {},
        expires_at: null,
        capabilities: [
          {
            namespace: '*',
            actions: ['read', 'list', 'write', 'delete', 'manage_tokens'],
            types: ['config', 'secret'],
          },
        ],
        privileges: [
          'manage_tokens',
          'create_tokens',
          'list_tokens',
          'manage_keyring',
          'read_keyring',
          'read_audit',
          'manage_roles',
          'read_metrics',
          'manage_webhooks',
        ],
      });
    });

    it('describes a role token and a scoped token', async () => {
      const role = await c.call('POST', '/v1/auth/token', {
        json: { role: 'config-reader', metadata: { name: 'cfg' } },
      });
      const me = await c.call('GET', '/v1/auth/me', { token: role.body.token });
      expect(me.body).to.deep.equal({
        id: role.body.id,
        is_root: false,
        role: 'config-reader',
        scopes: null,
        metadata: { name: 'cfg' },
        expires_at: role.body.expires_at,
        capabilities: [{ namespace: '*', actions: ['read', 'list'], types: ['config'] }],
        privileges: [],
      });
      const scoped = await c.call('POST', '/v1/auth/token', {
        json: {
          scopes: [
            { namespace: 'a/*', read: true, write: true },
            { namespace: 'b', write: true },
          ],
        },
      });
      const me2 = await c.call('GET', '/v1/auth/me', { token: scoped.body.token });
      expect(me2.body.role).to.equal(null);
      expect(me2.body.scopes).to.deep.equal(scoped.body.scopes);
      expect(me2.body.capabilities).to.deep.equal([
        {
          namespace: 'a/*',
          actions: ['read', 'list', 'write', 'delete'],
          types: ['config', 'secret'],
        },
        { namespace: 'b', actions: ['write', 'delete'], types: ['config', 'secret'] },
      ]);
    });
  });

  describe('bad credentials', () => {
    it('answers 401 with WWW-Authenticate for missing, malformed, unknown and wrong tokens', async () => {
      const real = await c.token({ role: 'reader' });
      const cases: [string, Record<string, string>, string | null][] = [
        ['missing', {}, null],
        ['basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, null],
        ['empty bearer', { authorization: 'Bearer ' }, null],
        ['two values', { authorization: 'Bearer a b' }, null],
        ['unknown id', {}, `cfr_AAAAAAAAAAAAAAAA_${'a'.repeat(43)}`],
        ['wrong secret', {}, `${real.slice(0, 21)}${'b'.repeat(43)}`],
        ['truncated', {}, real.slice(0, -1)],
        ['garbage', {}, 'hello'],
      ];
      for (const [name, headers, token] of cases) {
        const res = await c.call('GET', '/v1/kv/a/b', { token, headers });
        expect(res.status, name).to.equal(401);
        expect(res.body.code, name).to.equal('unauthorized');
        expect(res.headers.get('www-authenticate'), name).to.match(/^Bearer/);
        expect(res.headers.get('content-type'), name).to.match(/^application\/problem\+json/);
      }
    });

    it('routes first (an unknown path 404, a method the path does not serve 405), then checks the token before the body or the name', async () => {
      for (const [method, path, status] of [
        ['GET', '/v1/nothing', 404],
        ['OPTIONS', '/v1/kv/a/b', 405],
        ['PUT', '/v1/kv/a/versions', 401],
        ['PUT', '/v1/kv/a/b', 401],
      ] as const) {
        expect(
          (
            await c.call(method, path, {
              token: null,
              body: '{',
              headers: { 'content-type': 'text/plain' },
            })
          ).status,
          path,
        ).to.equal(status);
      }
    });

    it('never echoes the presented token', async () => {
      const token = `cfr_AAAAAAAAAAAAAAAA_${'z'.repeat(43)}`;
      const res = await c.call('GET', '/v1/auth/me', { token });
      expect(res.text).to.not.include(token).and.not.include('z'.repeat(43));
    });
  });
});
