import { request } from 'node:http';
import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { openEventStream, opened, type TestEventStream } from '../support/event-stream.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { serveSettings, startProcess } from '../support/process.js';
import { twoServersOnPostgres } from '../support/shared-servers.js';

/** The time (performance.now) at which `promise` settled, with its value. */
async function timed<T>(promise: Promise<T>): Promise<{ at: number; value: T }> {
  const value = await promise;
  return { at: performance.now(), value };
}

/** A server's metrics text, from which its held waits are read. */
type Metrics = () => Promise<string>;
const metricsOf =
  (c: TestCoffer): Metrics =>
  async () =>
    (await c.call('GET', '/v1/sys/metrics')).text;

/**
 * Until the server holds exactly `n` waiting reads (`coffer_kv_waits_held`; a server of several workers
 * sums theirs): the condition a write that must wake them, or a wait for a freed place, depends on.
 */
async function untilHeld(metrics: Metrics, n: number): Promise<void> {
  await eventually(
    async () => Number(/^coffer_kv_waits_held (\d+)$/m.exec(await metrics())?.[1]) === n,
    { what: `${n} waits held`, interval: 10 },
  );
}

describe('waiting for a change (wait_after, If-None-Match)', function () {
  this.timeout(60_000);

  describe('on one server', () => {
    let c: TestCoffer;
    before(async () => {
      c = await startTestCoffer();
    });
    after(async () => {
      await c?.close();
    });

    it('answers at once when the key is already past the version, and 304 with its ETag at the timeout', async () => {
      await c.put('w/a/k', 'v1');
      await c.put('w/a/k', 'v2');
      const now = await c.call('GET', '/v1/kv/w/a/k?wait_after=1');
      expect(now.status).to.equal(200);
      expect(now.body).to.include({ version: 2, value: 'v2' });
      expect(now.headers.get('etag')).to.equal('"2"');
      const started = performance.now();
      const unchanged = await c.call('GET', '/v1/kv/w/a/k?wait_after=2&timeout=300ms');
      expect(unchanged.status).to.equal(304);
      expect(unchanged.text).to.equal('');
      expect(unchanged.headers.get('etag')).to.equal('"2"');
      expect(performance.now() - started).to.be.at.least(290);
    });

    it('answers a held wait within 100 ms of the write that satisfies it', async () => {
      await c.put('w/b/k', 'v1');
      const waiting = timed(c.call('GET', '/v1/kv/w/b/k?wait_after=1&timeout=20s'));
      await untilHeld(metricsOf(c), 1);
      const written = await timed(c.put('w/b/k', 'v2'));
      const answered = await waiting;
      expect(answered.value.status).to.equal(200);
      expect(answered.value.body).to.include({ version: 2, value: 'v2' });
      expect(answered.at - written.at).to.be.below(100);
    });

    it('If-None-Match: 304 while the version holds, the entry when it moved on, and with timeout it waits', async () => {
      await c.put('w/c/k', 'v1');
      const held = await c.call('GET', '/v1/kv/w/c/k', { headers: { 'if-none-match': '"1"' } });
      expect(held.status).to.equal(304);
      await c.put('w/c/k', 'v2');
      const moved = await c.call('GET', '/v1/kv/w/c/k', { headers: { 'if-none-match': '"1"' } });
      expect(moved.status).to.equal(200);
      expect(moved.body.value).to.equal('v2');
      const waiting = c.call('GET', '/v1/kv/w/c/k?timeout=20s', {
        headers: { 'if-none-match': '"2"' },
      });
      await untilHeld(metricsOf(c), 1);
      await c.put('w/c/k', 'v3');
      expect((await waiting).body.value).to.equal('v3');
    });

    it('waits for a key to be created (wait_after=0), and answers 404 when the key it waits on is deleted', async () => {
      const created = c.call('GET', '/v1/kv/w/d/new?wait_after=0&timeout=20s');
      await untilHeld(metricsOf(c), 1);
      await c.put('w/d/new', 'here');
      expect((await created).body).to.include({ version: 1, value: 'here' });
      const deleted = c.call('GET', '/v1/kv/w/d/new?wait_after=1&timeout=20s');
      await untilHeld(metricsOf(c), 1);
      expect((await c.call('DELETE', '/v1/kv/w/d/new')).status).to.equal(204);
      expect((await deleted).status).to.equal(404);
    });

    it('checks the caller before it waits: 403 at once, for the namespace and for the type', async () => {
      await c.put('w/e/secret', 's');
      const other = await c.token({ scopes: [{ namespace: 'elsewhere', read: true }] });
      const started = performance.now();
      expect(
        (await c.call('GET', '/v1/kv/w/e/secret?wait_after=1&timeout=20s', { token: other }))
          .status,
      ).to.equal(403);
      const configReader = await c.token({ role: 'config-reader' });
      expect(
        (await c.call('GET', '/v1/kv/w/e/secret?wait_after=1&timeout=20s', { token: configReader }))
          .status,
      ).to.equal(403);
      expect(performance.now() - started).to.be.below(2000);
    });

    it('a namespace’s values: an ETag, 304 while it holds, and with timeout a wait woken by a write there', async () => {
      await c.put('w/f/one', '1');
      const first = await c.call('GET', '/v1/kv/w/f/?values=true');
      const etag = first.headers.get('etag')!;
      expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
      const same = await c.call('GET', '/v1/kv/w/f/?values=true', {
        headers: { 'if-none-match': etag },
      });
      expect(same.status).to.equal(304);
      const waiting = c.call('GET', '/v1/kv/w/f/?values=true&timeout=20s', {
        headers: { 'if-none-match': etag },
      });
      await untilHeld(metricsOf(c), 1);
      await c.put('w/f/deeper/other', 'not in w/f itself');
      await c.put('w/f/two', '2');
      const changed = await waiting;
      expect(changed.status).to.equal(200);
      expect(changed.body.values.map((v: { key: string }) => v.key)).to.deep.equal(['one', 'two']);
      expect(changed.headers.get('etag')).not.to.equal(etag);
      const quiet = await c.call('GET', '/v1/kv/w/f/?values=true&timeout=200ms', {
        headers: { 'if-none-match': changed.headers.get('etag')! },
      });
      expect(quiet.status).to.equal(304);
      // The tag is the namespace's, whichever page: a change on the second page wakes a watcher of the first.
      const firstPage = await c.call('GET', '/v1/kv/w/f/?values=true&limit=1');
      expect(firstPage.body.next_cursor).to.be.a('string');
      const secondPage = await c.call(
        'GET',
        `/v1/kv/w/f/?values=true&limit=1&cursor=${firstPage.body.next_cursor}`,
      );
      expect(secondPage.headers.get('etag')).to.equal(firstPage.headers.get('etag'));
      const watching = c.call('GET', '/v1/kv/w/f/?values=true&limit=1&timeout=20s', {
        headers: { 'if-none-match': firstPage.headers.get('etag')! },
      });
      await untilHeld(metricsOf(c), 1);
      await c.put('w/f/two', '2 again');
      const woke = await watching;
      expect(woke.status).to.equal(200);
      expect(woke.body.values.map((v: { key: string }) => v.key)).to.deep.equal(['one']);
      expect((await c.call('GET', '/v1/kv/w/f/?values=true&limit=1001')).status).to.equal(400);
    });

    it('refuses what does not make sense: a bad timeout, a timeout without a wait, a version, a weak or listed ETag', async () => {
      for (const [path, headers] of [
        ['/v1/kv/w/a/k?wait_after=1&timeout=soon', {}],
        ['/v1/kv/w/a/k?wait_after=1&timeout=301s', {}],
        ['/v1/kv/w/a/k?timeout=5s', {}],
        ['/v1/kv/w/a/k?wait_after=1&version=1', {}],
        ['/v1/kv/w/a/k?wait_after=x', {}],
        ['/v1/kv/w/a/k', { 'if-none-match': 'W/"1"' }],
        ['/v1/kv/w/a/k', { 'if-none-match': '"1", "2"' }],
        ['/v1/kv/w/a/k', { 'if-none-match': '"abc"' }],
        ['/v1/kv/w/a/?wait_after=1', {}],
        ['/v1/kv/w/a/?timeout=1s', {}],
      ] as [string, Record<string, string>][]) {
        const res = await c.call('GET', path, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).to.equal(400);
      }
    });

    it('records a 304 in the audit log like any read', async () => {
      const res = await c.call('GET', '/v1/kv/w/a/k?wait_after=2&timeout=10ms');
      const line = auditLines(c.config.audit.dir!).find(
        (l) => l.request_id === res.headers.get('x-request-id'),
      );
      expect(line).to.deep.include({ action: 'read', namespace: 'w/a', key: 'k', version: 2 });
      expect(line?.outcome).to.deep.include({ status: 304 });
    });
  });

  describe('bounded', () => {
    let c: TestCoffer;
    before(async () => {
      c = await startTestCoffer({ env: { COFFER_MAX_WAITS: '3' } });
      await c.put('b/a/k', 'v1');
    });
    after(async () => {
      await c?.close();
    });

    /** A wait whose connection the test can cut, by `token` from `from` (a loopback address). */
    const heldWait = (token: string, from = '127.0.0.1') => {
      const req = request(`${c.url}/v1/kv/b/a/k?wait_after=1&timeout=30s`, {
        headers: { authorization: `Bearer ${token}` },
        agent: false,
        localAddress: from,
      });
      req.on('error', () => undefined);
      req.end();
      return req;
    };
    /** A wait's answer, by `token` from `from`. */
    const wait = (token: string, from: string, timeout = '5s') =>
      new Promise<{ status: number; detail?: string; retryAfter?: string }>((resolve, reject) => {
        const req = request(
          `${c.url}/v1/kv/b/a/k?wait_after=1&timeout=${timeout}`,
          { headers: { authorization: `Bearer ${token}` }, agent: false, localAddress: from },
          (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString()));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                detail: text ? (JSON.parse(text) as { detail?: string }).detail : undefined,
                retryAfter: res.headers['retry-after'] as string | undefined,
              }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      });

    it('refuses a wait beyond the bound with 429 and Retry-After, and frees a place when a client goes away', async () => {
      // Three callers, each within its share (a token a quarter, an address half: at least one each).
      const tokens = await Promise.all([1, 2, 3, 4].map(() => c.token({ role: 'reader' })));
      const held = [
        heldWait(tokens[0]!, '127.0.0.2'),
        heldWait(tokens[1]!, '127.0.0.3'),
        heldWait(tokens[2]!, '127.0.0.4'),
      ];
      await untilHeld(metricsOf(c), 3);
      const refused = await wait(tokens[3]!, '127.0.0.5');
      expect(refused.status).to.equal(429);
      expect(refused.retryAfter).to.equal('1');
      expect(refused.detail).to.include('(3)');
      // Reads that do not wait are not counted.
      expect((await c.call('GET', '/v1/kv/b/a/k')).status).to.equal(200);
      for (const req of held) req.destroy();
      await untilHeld(metricsOf(c), 0);
      expect((await c.call('GET', '/v1/kv/b/a/k?wait_after=1&timeout=50ms')).status).to.equal(304);
    });

    it('gives one token, and one address, only a share of the places: one caller cannot hold them all', async () => {
      const [one, two] = await Promise.all([
        c.token({ role: 'reader' }),
        c.token({ role: 'reader' }),
      ]);
      // With 3 places: a token holds at most 1, an address at most 1.
      const held = heldWait(one, '127.0.0.6');
      await untilHeld(metricsOf(c), 1);
      const sameToken = await wait(one, '127.0.0.7');
      expect(sameToken.status).to.equal(429);
      expect(sameToken.detail).to.include(
        'this token holds as many waiting requests as one token may',
      );
      const sameAddress = await wait(two, '127.0.0.6');
      expect(sameAddress.status).to.equal(429);
      expect(sameAddress.detail).to.include('this address holds as many');
      // Another token from another address still gets its place.
      expect((await wait(two, '127.0.0.8', '50ms')).status).to.equal(304);
      held.destroy();
      await untilHeld(metricsOf(c), 0);
      expect((await wait(one, '127.0.0.7', '50ms')).status).to.equal(304);
    });

    it('answers held waits at once when the server stops', async () => {
      const waiting = timed(c.call('GET', '/v1/kv/b/a/k?wait_after=1&timeout=60s'));
      await untilHeld(metricsOf(c), 1);
      const stopping = performance.now();
      const closed = c.close();
      const answered = await waiting;
      await closed;
      expect(answered.value.status).to.equal(304);
      expect(answered.at - stopping).to.be.below(2000);
    });
  });

  describe('across the workers of one server', () => {
    it('wakes waits held by every worker within 100 ms of a write taken by any of them', async () => {
      const { env, root } = serveSettings(2);
      const server = await startProcess(env);
      try {
        await send(server.url, 'PUT', '/v1/kv/x/a/k', root, { value: 'v1', type: 'secret' });
        // Connections go to the workers in turn: six waits are held by both.
        const waits = Array.from({ length: 6 }, () =>
          timed(send(server.url, 'GET', '/v1/kv/x/a/k?wait_after=1&timeout=20s', root)),
        );
        await untilHeld(
          async () => String((await send(server.url, 'GET', '/v1/sys/metrics', root)).body),
          6,
        );
        const written = await timed(
          send(server.url, 'PUT', '/v1/kv/x/a/k', root, { value: 'v2', type: 'secret' }),
        );
        for (const wait of await Promise.all(waits)) {
          expect(wait.value.status).to.equal(200);
          expect(wait.value.body.value).to.equal('v2');
          expect(wait.at - written.at).to.be.below(100);
        }
      } finally {
        await server.stop();
      }
    });
  });

  describe('relayed between workers only where a wait is held', () => {
    /** A counter of the server's workers so far (summed over them). */
    const counted = async (url: string, root: string, name: string): Promise<number> =>
      Number(
        new RegExp(`^${name} (\\d+)$`, 'm').exec(
          String((await send(url, 'GET', '/v1/sys/metrics', root)).body),
        )?.[1],
      );
    /** The changes relayed to the server's workers so far. */
    const relayed = (url: string, root: string): Promise<number> =>
      counted(url, root, 'coffer_kv_changes_relayed_total');
    /** The changes the workers sent to the supervisor so far. */
    const published = (url: string, root: string): Promise<number> =>
      counted(url, root, 'coffer_kv_changes_published_total');
    /**
     * Four event streams, into `streams` (closed by the test), on both workers most likely (connections go
     * where the kernel puts them); each is answered once its wait is held (and taken by the supervisor).
     */
    const openHeld = async (
      url: string,
      root: string,
      streams: TestEventStream[],
      query = '',
    ): Promise<void> => {
      for (let i = 0; i < 4; i++) streams.push(openEventStream(url, root, query));
      for (const stream of streams) expect(await opened(stream)).to.equal(200);
      await untilHeld(
        async () => String((await send(url, 'GET', '/v1/sys/metrics', root)).body),
        4,
      );
    };

    it('sends and tells no worker of writes while none holds a wait, and every open event stream gets every write, whichever worker took it', async () => {
      const { env, root } = serveSettings(2);
      const server = await startProcess(env);
      const streams: TestEventStream[] = [];
      try {
        for (let i = 0; i < 20; i++)
          await send(server.url, 'PUT', `/v1/kv/quiet/k${i}`, root, { value: 'v', type: 'secret' });
        expect(await relayed(server.url, root)).to.equal(0);
        // Nor did the workers send them to the supervisor (server/change-senders.ts).
        expect(await published(server.url, root)).to.equal(0);
        await openHeld(server.url, root, streams);
        for (let i = 0; i < 20; i++)
          await send(server.url, 'PUT', `/v1/kv/loud/k${i}`, root, { value: 'v', type: 'secret' });
        for (const stream of streams) {
          const got = await stream.until(20, 5_000);
          expect(got.map((e) => e.data.key)).to.deep.equal(
            Array.from({ length: 20 }, (_, i) => `k${i}`),
          );
        }
      } finally {
        for (const stream of streams) stream.close();
        await server.stop();
      }
    });

    it("sends a token's revocation, an event naming no key, to every open stream within a second, whichever worker revoked it", async () => {
      const { env, root } = serveSettings(2);
      const server = await startProcess(env);
      const streams: TestEventStream[] = [];
      try {
        await openHeld(server.url, root, streams, '?kinds=token.revoke');
        for (let i = 0; i < 3; i++) {
          const made = await send(server.url, 'POST', '/v1/auth/token', root, { role: 'reader' });
          const id = String(made.body.id);
          expect((await send(server.url, 'DELETE', `/v1/auth/token/${id}`, root)).status).to.equal(
            204,
          );
          // No change of a key follows to wake the streams, and their heartbeat is 15 s away.
          for (const stream of streams)
            expect((await stream.until(i + 1, 1_000)).at(-1)!.data).to.include({ token_id: id });
        }
      } finally {
        for (const stream of streams) stream.close();
        await server.stop();
      }
    });
  });

  describe('across servers on PostgreSQL', () => {
    const servers = twoServersOnPostgres();
    let a: TestCoffer;
    let b: TestCoffer;
    before(() => {
      a = servers.a();
      b = servers.b();
    });

    it('wakes a wait held by one server within 100 ms of a write taken by another', async () => {
      await a.put('p/a/k', 'v1');
      const waiting = timed(a.call('GET', '/v1/kv/p/a/k?wait_after=1&timeout=20s'));
      const values = a.call('GET', '/v1/kv/p/a/?values=true&timeout=20s', {
        headers: {
          'if-none-match': (await a.call('GET', '/v1/kv/p/a/?values=true')).headers.get('etag')!,
        },
      });
      await untilHeld(metricsOf(a), 2);
      const written = await timed(b.put('p/a/k', 'v2'));
      const answered = await waiting;
      expect(answered.value.body).to.include({ version: 2, value: 'v2' });
      expect(answered.at - written.at).to.be.below(100);
      expect((await values).body.values[0]).to.include({ key: 'k', version: 2 });
      const deleted = a.call('GET', '/v1/kv/p/a/k?wait_after=2&timeout=20s');
      await untilHeld(metricsOf(a), 1);
      expect((await b.call('DELETE', '/v1/kv/p/a/k')).status).to.equal(204);
      expect((await deleted).status).to.equal(404);
    });
  });
});
