import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { type AuditLine, auditFiles, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { type ApiResponse, startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

type Entry = AuditLine;
const fileEntries = (c: TestCoffer): Entry[] => auditLines(c.config.audit.dir!);
const filesOf = (c: TestCoffer): string[] => auditFiles(c.config.audit.dir!);

const order = (a: Entry, b: Entry): number =>
  a.ts < b.ts
    ? -1
    : a.ts > b.ts
      ? 1
      : a.chain < b.chain
        ? -1
        : a.chain > b.chain
          ? 1
          : a.seq - b.seq;

describe('audit entries, operator events and GET /v1/sys/audit', function () {
  this.timeout(60_000);

  it('gives every endpoint exactly one entry per request, with its route, action, caller and outcome', async () => {
    const c = await startTestCoffer();
    try {
      await c.put('every/app/k', 'v1', 'config');
      const reader = await c.token({ role: 'reader' });
      const readerId = reader.split('_')[1]!;
      const doomed = await c.token({ role: 'reader' });
      const calls: [string, string, unknown, string, string][] = [
        // method, path, body, route template, action
        ['GET', '/v1/openapi.json', undefined, '/v1/openapi.json', 'openapi'],
        ['GET', '/v1/auth/me', undefined, '/v1/auth/me', 'token.self'],
        ['POST', '/v1/auth/token', { role: 'reader' }, '/v1/auth/token', 'token.create'],
        ['GET', '/v1/auth/tokens', undefined, '/v1/auth/tokens', 'token.list'],
        ['DELETE', `/v1/auth/token/${doomed}`, undefined, '/v1/auth/token/{token}', 'token.revoke'],
        ['PUT', '/v1/kv/every/app/k', { value: 'v2', type: 'config' }, '/v1/kv/{path}', 'write'],
        ['GET', '/v1/kv/every/app/k', undefined, '/v1/kv/{path}', 'read'],
        ['GET', '/v1/kv/every/app/k?version=1', undefined, '/v1/kv/{path}', 'read'],
        ['GET', '/v1/kv/every/app/k/versions', undefined, '/v1/kv/{path}', 'versions'],
        ['GET', '/v1/kv/every/app/', undefined, '/v1/kv/{path}', 'list'],
        ['DELETE', '/v1/kv/every/app/k', undefined, '/v1/kv/{path}', 'delete'],
        ['GET', '/v1/sys/keyring', undefined, '/v1/sys/keyring', 'keyring.status'],
        ['POST', '/v1/sys/keyring/rotate', undefined, '/v1/sys/keyring/rotate', 'keyring.rotate'],
        ['POST', '/v1/sys/keyring/rewrap', undefined, '/v1/sys/keyring/rewrap', 'keyring.rewrap'],
        [
          'GET',
          '/v1/sys/keyring/rewrap',
          undefined,
          '/v1/sys/keyring/rewrap',
          'keyring.rewrap.status',
        ],
        ['POST', '/v1/sys/keyring/retire', undefined, '/v1/sys/keyring/retire', 'keyring.retire'],
        [
          'POST',
          '/v1/sys/keyring/migrate',
          { key_provider: 'pkcs11' },
          '/v1/sys/keyring/migrate',
          'keyring.migrate',
        ],
        ['GET', '/v1/sys/audit?limit=5', undefined, '/v1/sys/audit', 'audit.read'],
        ['GET', '/v1/sys/seal-report', undefined, '/v1/sys/seal-report', 'audit.seal_report'],
      ];
      const made: [ApiResponse, string, string, string, string][] = [];
      for (const [method, path, json, route, action] of calls) {
        const res = await c.call(method, path, json === undefined ? {} : { json });
        made.push([res, method, route, action, path]);
      }
      // And as another caller, refused.
      const refused = await c.call('DELETE', '/v1/kv/every/app/other', { token: reader });
      expect(refused.status).to.equal(403);

      const all = fileEntries(c);
      for (const [res, method, route, action, path] of made) {
        const id = res.headers.get('x-request-id');
        const mine = all.filter((e) => e.request_id === id && e.kind === 'request');
        expect(mine, `${method} ${path}`).to.have.length(1);
        // A change also has its intent entry, written before the change.
        const intents = all.filter((e) => e.request_id === id && e.kind === 'intent');
        const changes = ['token.create', 'token.revoke', 'write', 'delete'];
        expect(
          intents.map((e) => e.action),
          `${method} ${path}`,
        ).to.deep.equal(changes.includes(action) ? [action] : []);
        if (intents.length > 0) expect(intents[0]!.seq).to.be.below(mine[0]!.seq as number);
        expect(mine[0], `${method} ${path}`).to.deep.include({
          kind: 'request',
          method,
          route,
          action,
          token_id: route === '/v1/openapi.json' ? null : 'root',
        });
        expect((mine[0]!.outcome as { status: number }).status, `${method} ${path}`).to.equal(
          res.status,
        );
        expect(mine[0]!.duration_ms).to.be.a('number');
        expect(mine[0]!.client).to.match(/127\.0\.0\.1/);
      }
      // Refused before it could change anything: no intent.
      const refusedEntry = all.filter((e) => e.request_id === refused.headers.get('x-request-id'));
      expect(refusedEntry).to.have.length(1);
      expect(refusedEntry[0]).to.deep.include({
        token_id: readerId,
        role: 'reader',
        action: 'delete',
        namespace: 'every/app',
        key: 'other',
        outcome: { status: 403, code: 'forbidden' },
      });
      // No request is recorded twice: request ids are unique across the log.
      const ids = all.filter((e) => e.kind === 'request').map((e) => e.request_id);
      expect(new Set(ids).size).to.equal(ids.length);
    } finally {
      await c.close();
    }
  });

  it('records operator events as their own entries: token create and revoke, rotation, rewrap, retirement, migration, root-token change', async () => {
    const dir = tempDir();
    const c = await startTestCoffer({ dataDir: dir });
    let next: TestCoffer | undefined;
    try {
      await c.put('ops/k', 'v');
      const created = await c.call('POST', '/v1/auth/token', {
        json: { role: 'writer', metadata: { name: 'ci' } },
      });
      expect((await c.call('DELETE', `/v1/auth/token/${created.body.id}`)).status).to.equal(204);
      expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
      expect((await c.call('POST', '/v1/sys/keyring/rewrap')).status).to.equal(202);
      await eventually(async () => !(await c.call('GET', '/v1/sys/keyring/rewrap')).body.running, {
        what: 'the rewrap finished',
      });
      expect((await c.call('POST', '/v1/sys/keyring/retire')).body.retired).to.deep.equal([1]);
      writeFileSync(join(dir, 'keys', 'next.key'), randomBytes(32), { mode: 0o600 });
      const migrated = await c.call('POST', '/v1/sys/keyring/migrate', {
        json: { key_provider: 'local', master_key_file: join(dir, 'keys', 'next.key') },
      });
      expect(migrated.status, migrated.text).to.equal(200);

      const events = fileEntries(c).filter((e) => e.kind === 'event');
      const named = (name: string): Entry | undefined => events.find((e) => e.event === name);
      expect(named('server.start')).to.include({ pid: process.pid });
      expect(named('token.create')).to.deep.include({
        by: 'root',
        token_id: created.body.id,
        role: 'writer',
        scopes: null,
        expires_at: created.body.expires_at,
      });
      expect(named('token.create')).to.not.have.property('metadata');
      expect(named('token.revoke')).to.deep.include({ by: 'root', token_id: created.body.id });
      expect(named('keyring.rotate')).to.deep.include({
        by: 'root',
        previous_version: 1,
        active_version: 2,
      });
      expect(named('keyring.rewrap.start')).to.deep.include({ by: 'root', target: 2, total: 1 });
      expect(named('keyring.rewrap.finish')).to.deep.include({
        by: 'root',
        target: 2,
        examined: 1,
        rewrapped: 1,
        failed: 0,
      });
      expect(named('keyring.retire')).to.deep.include({ by: 'root', retired_versions: [1] });
      expect(named('keyring.migrate')).to.deep.include({ by: 'root', migrations: 1 });
      expect(String(named('keyring.migrate')!.to)).to.include('next.key');
      // Nothing from the token itself: only its id.
      expect(readFileSync(filesOf(c)[0]!, 'utf8')).not.to.include(created.body.token);

      // The same root token on restart is no change; a different one is, and is recorded.
      await c.app.close();
      const again = await startTestCoffer({
        dataDir: dir,
        rootToken: c.rootToken,
        env: { COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'next.key') },
        ownsDir: false,
      });
      await again.close();
      next = await startTestCoffer({
        dataDir: dir,
        env: { COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'next.key') },
        ownsDir: true,
      });
      const changes = fileEntries(next).filter(
        (e) => typeof e.event === 'string' && (e.event as string).startsWith('root_token.'),
      );
      expect(changes.map((e) => e.event)).to.deep.equal(['root_token.set', 'root_token.replace']);
      expect(changes[1]).to.deep.include({ by: 'COFFER_ROOT_TOKEN' });
      const text = filesOf(next)
        .map((f) => readFileSync(f, 'utf8'))
        .join('');
      expect(text).not.to.include(next.rootToken);
      expect(text).not.to.include(c.rootToken);
    } finally {
      await next?.close();
    }
  });

  it('records what a request refused for its token asked for — route, action, namespace and key — so "who tried to read X" is answered', async () => {
    const c = await startTestCoffer();
    try {
      await c.put('payments/prod/db_password', 's3cret');
      const wrong = `cfr_${'A'.repeat(16)}_${'B'.repeat(43)}`;
      const read = await c.call('GET', '/v1/kv/payments/prod/db_password', { token: wrong });
      expect(read.status).to.equal(401);
      const none = await c.call('DELETE', '/v1/kv/payments/prod/db_password', { token: null });
      expect(none.status).to.equal(401);
      const found = await c.call(
        'GET',
        '/v1/sys/audit?prefix=payments/prod/db_password&outcome=failure',
      );
      expect(found.status).to.equal(200);
      const byId = new Map((found.body.entries as Entry[]).map((e) => [e.request_id as string, e]));
      expect(byId.get(read.headers.get('x-request-id')!)).to.deep.include({
        route: '/v1/kv/{path}',
        action: 'read',
        namespace: 'payments/prod',
        key: 'db_password',
        token_id: null,
      });
      // `error` is taken for `failure`, as the console once said.
      const same = await c.call(
        'GET',
        '/v1/sys/audit?prefix=payments/prod/db_password&outcome=error',
      );
      expect(same.body.entries.map((e: Entry) => e.request_id)).to.deep.equal(
        found.body.entries.map((e: Entry) => e.request_id),
      );
      expect(byId.get(none.headers.get('x-request-id')!)).to.deep.include({
        route: '/v1/kv/{path}',
        action: 'delete',
        namespace: 'payments/prod',
        key: 'db_password',
      });
    } finally {
      await c.close();
    }
  });

  describe('GET /v1/sys/audit', () => {
    let c: TestCoffer;
    let readerId: string;
    let everything: Entry[];

    const page = async (
      query: string,
    ): Promise<{ entries: Entry[]; next_cursor: string | null }> => {
      const res = await c.call('GET', `/v1/sys/audit${query}`);
      expect(res.status, res.text).to.equal(200);
      return res.body;
    };

    /** Every matching entry, following cursors with pages of `limit`. */
    const walk = async (query: string, limit: number): Promise<Entry[]> => {
      const out: Entry[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 1000; i++) {
        const sep = query === '' ? '?' : '&';
        const p = await page(
          `${query}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`.replace(/^&/, '?'),
        );
        expect(p.entries.length).to.be.at.most(limit);
        out.push(...p.entries);
        cursor = p.next_cursor;
        if (cursor === null) return out;
        expect(p.entries).to.have.length(limit);
      }
      throw new Error('too many pages');
    };

    before(async () => {
      // Small files, so the chain runs across several of them.
      c = await startTestCoffer({
        env: { COFFER_AUDIT_MAX_FILE_BYTES: '4096', COFFER_AUDIT_CHECKPOINT_EVERY: '10' },
      });
      const reader = await c.token({ role: 'reader', metadata: { name: 'payments-api' } });
      readerId = reader.split('_')[1]!;
      for (let i = 0; i < 12; i++) await c.put(`q/a/k${i % 4}`, `value-${i}`);
      await c.put('q/a/k10', 'starts like k1');
      for (let i = 0; i < 6; i++) await c.put(`q/b/k${i}`, `value-${i}`, 'config');
      for (let i = 0; i < 5; i++) await c.call('GET', `/v1/kv/q/a/k${i % 4}`, { token: reader });
      for (let i = 0; i < 3; i++)
        await c.call('PUT', '/v1/kv/q/a/k0', {
          token: reader,
          json: { value: 'no', type: 'secret' },
        });
      await c.call('GET', '/v1/kv/q/a/missing');
      await c.call('POST', '/v1/sys/keyring/rotate');
      everything = fileEntries(c)
        .filter((e) => e.kind !== 'checkpoint' && e.kind !== 'intent')
        .sort(order);
      expect(filesOf(c).length, 'the log spans several files').to.be.greaterThan(1);
    });
    after(async () => {
      await c.close();
    });

    it('pages through every entry in (time, chain, seq) order, each once, without checkpoints', async () => {
      const all = await walk('', 7);
      const key = (e: Entry): string => `${e.chain}:${e.seq}`;
      expect(new Set(all.map(key)).size).to.equal(all.length);
      expect(all.every((e) => e.kind !== 'checkpoint' && e.kind !== 'intent')).to.equal(true);
      // What was in the files before the walk began is all there, in order (the walk's own reads come after).
      expect(all.slice(0, everything.length).map(key)).to.deep.equal(everything.map(key));
      expect([...all].sort(order).map(key)).to.deep.equal(all.map(key));
      const single = await page('?limit=1000');
      expect(single.entries.slice(0, everything.length).map(key)).to.deep.equal(
        everything.map(key),
      );
    });

    it('pages newest first with order=newest, each entry once, and refuses a cursor of the other order', async () => {
      const oldest = await walk('', 1000);
      const newest = await walk('?order=newest', 7);
      const key = (e: Entry): string => `${e.chain}:${e.seq}`;
      // The walks' own reads are entries too: what both saw is the same, in the opposite order.
      const seen = new Set(oldest.map(key));
      expect(newest.filter((e) => seen.has(key(e))).map(key)).to.deep.equal(
        [...oldest].reverse().map(key),
      );
      const first = await page('?order=newest&limit=2');
      const other = await c.call('GET', `/v1/sys/audit?cursor=${first.next_cursor}`);
      expect(other.status).to.equal(400);
      expect(other.body.detail).to.match(/cursor belongs to the newest-first order/);
    });

    it('filters by token id: the caller, the token acted on, or who ran an event', async () => {
      const mine = await walk(`?token_id=${readerId}`, 4);
      expect(mine.length).to.be.at.least(9);
      for (const e of mine) expect([e.token_id, e.subject_token_id, e.by]).to.include(readerId);
      expect(mine.filter((e) => e.kind === 'request' && e.token_id === readerId)).to.have.length(8);
      expect(mine.find((e) => e.event === 'token.create')).to.deep.include({ token_id: readerId });
    });

    it('filters by namespace/key prefix, action and outcome', async () => {
      const underA = (await page('?prefix=q/a/&limit=1000')).entries;
      expect(underA.length).to.equal(
        everything.filter(
          (e) => typeof e.namespace === 'string' && `${e.namespace}/${e.key}`.startsWith('q/a/'),
        ).length,
      );
      for (const e of underA) expect(`${e.namespace}/${e.key}`.startsWith('q/a/')).to.equal(true);
      expect(
        (await page('?prefix=q/a/k0&limit=1000')).entries.every((e) => e.key === 'k0'),
      ).to.equal(true);

      // key= is exact: q/a/k1, not q/a/k10.
      const exact = (await page('?key=q/a/k1&limit=1000')).entries;
      expect(exact.length).to.be.greaterThan(0);
      expect(exact.every((e) => e.namespace === 'q/a' && e.key === 'k1')).to.equal(true);
      expect(
        (await page('?prefix=q/a/k1&limit=1000')).entries.some((e) => e.key === 'k10'),
      ).to.equal(true);
      expect((await c.call('GET', '/v1/sys/audit?key=nokey')).status).to.equal(400);

      // Entries name the caller's token by its metadata name too.
      const reads = (await page(`?token_id=${readerId}&action=read&limit=1000`)).entries;
      expect(reads).to.have.length(5);
      expect(reads.every((e) => e.token_name === 'payments-api')).to.equal(true);
      // ...and search finds them by it, or one request by its X-Request-Id.
      const named = (await page('?token_name=payments-api&action=read&limit=1000')).entries;
      expect(named.map((e) => e.seq)).to.deep.equal(reads.map((e) => e.seq));
      expect((await page('?token_name=payments&limit=1000')).entries).to.deep.equal([]);
      const one = (await page(`?request_id=${reads[2]!.request_id}`)).entries;
      expect(one.map((e) => e.seq)).to.deep.equal([reads[2]!.seq]);

      const writes = (await page('?action=write&limit=1000')).entries;
      expect(writes.length).to.equal(12 + 1 + 6 + 3);
      expect(writes.every((e) => e.action === 'write')).to.equal(true);
      const keyring = (await page('?action=keyring.*&limit=1000')).entries;
      expect(keyring.map((e) => (e.kind === 'event' ? e.event : e.action))).to.deep.equal([
        'keyring.rotate',
        'keyring.rotate',
      ]);

      const forbidden = (await page('?outcome=forbidden&limit=1000')).entries;
      expect(forbidden).to.have.length(3);
      expect((await page('?outcome=403&limit=1000')).entries).to.deep.equal(forbidden);
      expect((await page('?outcome=404&limit=1000')).entries.map((e) => e.key)).to.deep.equal([
        'missing',
      ]);
      const failures = (await page('?outcome=failure&action=write&limit=1000')).entries;
      expect(failures.map((e) => e.seq)).to.deep.equal(forbidden.map((e) => e.seq));
      const successes = (await page('?outcome=success&action=write&limit=1000')).entries;
      expect(successes).to.have.length(19);
    });

    it('filters by time range: from inclusive, to exclusive', async () => {
      const middle = everything[Math.floor(everything.length / 2)]!;
      const from = (await walk(`?from=${middle.ts}`, 50)).filter((e) =>
        everything.some((x) => x.chain === e.chain && x.seq === e.seq),
      );
      expect(from.map((e) => e.seq)).to.deep.equal(
        everything.filter((e) => e.ts >= middle.ts).map((e) => e.seq),
      );
      const to = (await page(`?to=${middle.ts}&limit=1000`)).entries;
      expect(to.map((e) => e.seq)).to.deep.equal(
        everything.filter((e) => e.ts < middle.ts).map((e) => e.seq),
      );
      expect(
        (await page('?from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z')).entries,
      ).to.deep.equal([]);
    });

    it('refuses malformed filters with 400 and says which', async () => {
      const cases: [string, string][] = [
        ['?from=yesterday', 'from'],
        ['?to=2026-13-45T99:00:00Z', 'to'],
        ['?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'to'],
        ['?limit=0', 'limit'],
        ['?limit=1001', 'limit'],
        ['?cursor=not-a-cursor', 'cursor'],
        [`?token_id=${encodeURIComponent(c.rootToken)}`, 'token_id'],
        ['?outcome=maybe!', 'outcome'],
        ['?action=DROP%20TABLE', 'action'],
        ['?prefix=', 'prefix'],
        ['?token_name=', 'token_name'],
        ['?request_id=a%20b', 'request_id'],
        ['?nosuch=1', 'nosuch'],
        ['?limit=5&limit=6', ''],
      ];
      for (const [query, field] of cases) {
        const res = await c.call('GET', `/v1/sys/audit${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body.code).to.equal('invalid_request');
        if (field !== '')
          expect(
            res.body.errors.map((e: { field: string }) => e.field),
            query,
          ).to.include(field);
        expect(res.text).not.to.include(c.rootToken);
      }
    });

    it('leaves the log verifiable while it is being searched', async () => {
      expect(await c.verifyLog(filesOf(c))).to.deep.include({ intact: true });
    });
  });
});
