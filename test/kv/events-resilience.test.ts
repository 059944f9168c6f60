import { expect } from 'chai';
import pg from 'pg';
import { EVENTS_RANGE, eventKey, metaKey, positionOf } from '../../src/store/layout.js';
import { openEventStream, opened, type TestEventStream } from '../support/event-stream.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { Relay } from '../support/pg-relay.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { killAll, serveSettings, startProcess } from '../support/process.js';
import { pgEnv, secondServer, twoServersOnPostgres } from '../support/shared-servers.js';
import { steadyWriter } from '../support/steady-writer.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The events' versions and positions, checked to follow one another with none repeated. */
function inOrder(events: readonly { id: string; data: { version: number } }[]): number[] {
  const positions = events.map((e) => Number(e.id));
  expect(new Set(positions).size, 'a position repeated').to.equal(positions.length);
  for (let i = 1; i < positions.length; i++)
    expect(positions[i], 'positions in order').to.be.above(positions[i - 1]!);
  return events.map((e) => e.data.version);
}

/** The position of the last event the store holds. */
async function lastPosition(c: TestCoffer): Promise<number> {
  let last = 0;
  for await (const { key } of c.storage.scan(EVENTS_RANGE)) last = positionOf(key);
  return last;
}

/** A write of `<namespace>/slow` held up in its transaction, and a stream on `namespace` (heldWrite). */
interface HeldWrite {
  readonly stream: TestEventStream;
  /** The held write's answer. */
  readonly write: Promise<{ status: number }>;
  /** Lets the held write go on (the other session commits). */
  release(): Promise<unknown>;
  end(): Promise<void>;
}

/**
 * A stream on `namespace` (none with `follow` false) that has had the first write of `<namespace>/slow`;
 * then another session locks that key's index row, and the key's next write takes its position in its
 * transaction's first round trip, then waits in its second, at that row, until `release()`.
 */
async function heldWrite(
  c: TestCoffer,
  schema: string,
  namespace: string,
  follow = true,
): Promise<HeldWrite> {
  const stream = openEventStream(c.url, c.rootToken, `?namespaces=${namespace}`);
  const holder = new pg.Client({ connectionString: PG_TEST_URL });
  const end = async () => {
    stream.close();
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  };
  try {
    await holder.connect();
    if (follow) expect(await opened(stream)).to.equal(200);
    else stream.close();
    await c.put(`${namespace}/slow`, 'v1');
    if (follow) await stream.until(1);
    // The reads its change set off are over (a read may follow a change by up to READ_GAP_MS): the
    // next one is set off by a write that commits while the held one is open.
    await sleep(100);
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM "${schema}".records WHERE k = $1 FOR UPDATE`, [
      metaKey(namespace, 'slow'),
    ]);
    const write = c.put(`${namespace}/slow`, 'v2');
    // Should the test fail before it awaits the write, the write settles as the server closes.
    write.catch(() => undefined);
    return { stream, write, release: () => holder.query('COMMIT'), end };
  } catch (err) {
    await end();
    throw err;
  }
}

describe('change events across servers and failures', function () {
  this.timeout(120_000);

  describe('two servers on one PostgreSQL store', () => {
    const servers = twoServersOnPostgres();
    let s: TestEventStream | undefined;
    after(() => s?.close());

    it("delivers a write made on B to a stream on A, in commit order with A's own", async () => {
      const [a, b] = [servers.a(), servers.b()];
      s = openEventStream(a.url, a.rootToken, '?namespaces=two');
      expect(await opened(s)).to.equal(200);
      await b.put('two/k', 'from-b-1');
      await a.put('two/k', 'from-a-2');
      await b.put('two/k', 'from-b-3');
      const got = await s.until(3, 5_000);
      expect(inOrder(got)).to.deep.equal([1, 2, 3]);
    });
  });

  it('kill -9 of the server while it is written: a stream resumed after it misses no committed change and repeats none', async () => {
    const { env, root } = serveSettings(2);
    let p = await startProcess(env);
    const stream = openEventStream(p.url, root, '?namespaces=killed');
    let resumed: TestEventStream | undefined;
    try {
      expect(await opened(stream)).to.equal(200);
      const writer = steadyWriter(p.url, root, '/v1/kv/killed/k');
      await stream.until(20, 20_000);
      await killAll(p);
      await writer.stop();
      stream.close();
      const before = stream.received.slice();
      p = await startProcess(env);
      const latest = (await send(p.url, 'GET', '/v1/kv/killed/k', root)).body.version as number;
      expect(latest).to.be.at.least(writer.acknowledged());
      resumed = openEventStream(p.url, root, '?namespaces=killed', {
        'Last-Event-ID': before.at(-1)!.id,
      });
      const rest = await resumed.until(latest - before.length, 20_000);
      // Every version the store holds, once, in order: what was acknowledged before the kill, and any
      // write committed as it came.
      expect(inOrder([...before, ...rest])).to.deep.equal(
        Array.from({ length: latest }, (_, i) => i + 1),
      );
      await sleep(200);
      expect(resumed.received).to.have.length(latest - before.length);
    } finally {
      stream.close();
      resumed?.close();
      await killAll(p).catch(() => undefined);
    }
  });

  it('PostgreSQL: a change that took a lower position and commits later is delivered first; no stream passes it while it is open', async function () {
    await requirePostgres(this);
    const schema = testSchema();
    const c = await startTestCoffer({ env: pgEnv(schema) });
    let held: HeldWrite | undefined;
    try {
      held = await heldWrite(c, schema, 'order');
      await sleep(300);
      // A write that took the next position commits meanwhile.
      expect((await c.put('order/fast', 'v1')).status).to.equal(201);
      // Past the reader's wait for running transactions (200 ms) and into its barrier: nothing is sent.
      await sleep(700);
      expect(held.stream.received).to.have.length(1);
      await held.release();
      expect((await held.write).status).to.equal(200);
      const got = await held.stream.until(3);
      expect(got.slice(1).map((e) => e.data.key)).to.deep.equal(['slow', 'fast']);
      inOrder(got);
    } finally {
      await held?.end();
      await c.close();
      await dropTestSchemas();
    }
  });

  it('PostgreSQL: a write held up in its transaction holds back the events after it, not the other writes, while a stream waits on it', async function () {
    await requirePostgres(this);
    const schema = testSchema();
    // A statement timeout long enough that the held write outlives the test's window.
    const c = await startTestCoffer({
      env: { ...pgEnv(schema), COFFER_PG_STATEMENT_TIMEOUT_MS: '20000' },
    });
    let held: HeldWrite | undefined;
    try {
      held = await heldWrite(c, schema, 'held');
      await sleep(250);
      // A later write commits; the stream's reader waits on the held one, then asks for the barrier.
      expect((await c.put('held/other', 'v0')).status).to.equal(201);
      await sleep(300);
      // Writes go on meanwhile: none waits behind the reader's barrier for the held write to end.
      let slowest = 0;
      let written = 0;
      const until = performance.now() + 800;
      while (performance.now() < until) {
        const started = performance.now();
        const answer = await Promise.race([
          c.put('held/other', `v${written + 1}`),
          sleep(1_500).then(() => undefined),
        ]);
        slowest = Math.max(slowest, performance.now() - started);
        if (answer === undefined) break;
        expect(answer.status).to.equal(200);
        written++;
      }
      // Nothing after the held write's position is sent while it is open.
      expect(held.stream.received).to.have.length(1);
      await held.release();
      expect((await held.write).status).to.equal(200);
      expect(slowest, 'the slowest write meanwhile (ms)').to.be.below(700);
      const got = await held.stream.until(3 + written);
      expect(got[1]!.data).to.include({ key: 'slow', version: 2 });
      inOrder(got);
    } finally {
      await held?.end();
      await c.close();
      await dropTestSchemas();
    }
  });

  it('PostgreSQL: a write held up in its transaction keeps its intent’s copy until it ends: deleting it waited, and held back the writes grouped with the delete', async function () {
    await requirePostgres(this);
    const schema = testSchema();
    const c = await startTestCoffer({
      env: { ...pgEnv(schema), COFFER_PG_STATEMENT_TIMEOUT_MS: '20000' },
    });
    const watcher = new pg.Client({ connectionString: PG_TEST_URL });
    await watcher.connect();
    // No stream: no reader's barrier is asked for.
    let held: HeldWrite | undefined;
    try {
      held = await heldWrite(c, schema, 'journal', false);
      // Writes after it: the audit file is synced past the held write's intent, and the copies' cleanup
      // (once a second) runs twice or more meanwhile.
      const until = performance.now() + 2_500;
      for (let i = 1; performance.now() < until; i++) {
        expect((await c.put(`journal/k${i}`, 'v')).status).to.equal(201);
        await sleep(50);
      }
      // Nothing of Coffer's waits for a lock but the held write, which waits for the other session.
      const { rows } = await watcher.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
      );
      expect(Number(rows[0]!.n), 'advisory locks waited for').to.equal(0);
      await held.release();
      expect((await held.write).status).to.equal(200);
    } finally {
      await held?.end();
      await watcher.end();
      await c.close();
      await dropTestSchemas();
    }
  });

  it('PostgreSQL: a server starts while a write of another is held up in its transaction, and holds no write back', async function () {
    await requirePostgres(this);
    const schema = testSchema();
    const c = await startTestCoffer({
      env: { ...pgEnv(schema), COFFER_PG_STATEMENT_TIMEOUT_MS: '20000' },
    });
    let held: HeldWrite | undefined;
    let starting: Promise<TestCoffer> | undefined;
    try {
      held = await heldWrite(c, schema, 'start');
      await sleep(250);
      const began = performance.now();
      starting = secondServer(c, schema, PG_TEST_URL, {
        COFFER_PG_STATEMENT_TIMEOUT_MS: '20000',
      });
      await sleep(300);
      // A write on the first server while the second prepares the store: not held behind it.
      const answer = await Promise.race([
        c.put('start/other', 'v1'),
        sleep(3_000).then(() => undefined),
      ]);
      expect(answer?.status, 'a write while the second server starts').to.equal(201);
      const second = await starting;
      expect(performance.now() - began, 'the second server’s start (ms)').to.be.below(5_000);
      await held.release();
      expect((await held.write).status).to.equal(200);
      // The second server numbers on after every event: its own write's event comes last.
      expect((await second.put('start/late', 'v1')).status).to.equal(201);
      const got = await held.stream.until(4);
      expect(got.slice(1).map((e) => e.data.key)).to.deep.equal(['slow', 'other', 'late']);
      inOrder(got);
    } finally {
      await held?.end();
      // Closed whatever failed, once it has started.
      await (await starting?.catch(() => undefined))?.close();
      await c.close();
      await dropTestSchemas();
    }
  });

  it('PostgreSQL: a transaction left open elsewhere in the cluster holds no event back for long (the barrier)', async function () {
    await requirePostgres(this);
    const c = await startTestCoffer({ env: pgEnv(testSchema()) });
    const s = openEventStream(c.url, c.rootToken, '?namespaces=elsewhere');
    const idle = new pg.Client({ connectionString: PG_TEST_URL });
    await idle.connect();
    try {
      expect(await opened(s)).to.equal(200);
      // Another application's session, idle in a transaction that has an id: every snapshot lists it.
      await idle.query('BEGIN');
      await idle.query('SELECT txid_current()');
      const started = performance.now();
      expect((await c.put('elsewhere/k', 'v1')).status).to.equal(201);
      const [event] = await s.until(1, 5_000);
      expect(event!.data).to.include({ key: 'k', version: 1 });
      // Past the reader's 200 ms wait for running transactions, through the barrier, well within a second.
      expect(performance.now() - started).to.be.below(2_000);
    } finally {
      s.close();
      await idle.query('ROLLBACK').catch(() => undefined);
      await idle.end();
      await c.close();
      await dropTestSchemas();
    }
  });

  it('starts when its last event record fails its check, and numbers the next event after it', async () => {
    const c = await startTestCoffer();
    let again: TestCoffer | undefined;
    try {
      await c.put('tampered/k', 'v1');
      const last = await lastPosition(c);
      // Someone who can write the storage spoils the last event's record while the server is down.
      await c.storage.atomic([], () => ({
        writes: [{ op: 'put', key: eventKey(last), value: Buffer.alloc(40, 7) }],
        result: undefined,
      }));
      again = await c.restart();
      expect((await again.put('tampered/k', 'v2')).status).to.equal(200);
      expect(await lastPosition(again)).to.equal(last + 1);
    } finally {
      await (again ?? c).close();
    }
  });

  it('a PostgreSQL connection cut: the stream ends, the EventSource comes back with Last-Event-ID, and misses none', async function () {
    await requirePostgres(this);
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    const c = await startTestCoffer({ env: pgEnv(testSchema(), relay.url()) });
    const s = openEventStream(c.url, c.rootToken, '?namespaces=cut');
    try {
      expect(await opened(s)).to.equal(200);
      for (const v of ['1', '2']) await c.put('cut/k', v);
      await s.until(2);
      await relay.cut();
      // Writes fail while the database cannot be reached; none is acknowledged.
      const refused = await c.call('PUT', '/v1/kv/cut/k', { json: { value: 'x', type: 'secret' } });
      expect(refused.status).to.equal(503);
      await relay.start(relay.port);
      let written = 0;
      for (let i = 0; written < 2 && i < 50; i++) {
        const res = await c.call('PUT', '/v1/kv/cut/k', { json: { value: 'y', type: 'secret' } });
        if (res.status === 200) written++;
        else await sleep(200);
      }
      const latest = (await c.call('GET', '/v1/kv/cut/k')).body.version as number;
      const got = await s.until(latest, 20_000);
      expect(inOrder(got)).to.deep.equal(Array.from({ length: latest }, (_, i) => i + 1));
    } finally {
      s.close();
      await c.close();
      await relay.cut();
      await dropTestSchemas();
    }
  });
});
