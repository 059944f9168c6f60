import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { type StorageBackend, StorageUnavailableError } from '../../src/storage/backend.js';
import { PostgresBackend } from '../../src/storage/postgres-backend.js';
import { eventually } from '../support/eventually.js';
import { Relay } from '../support/pg-relay.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';

const open = (schema: string): Promise<StorageBackend> =>
  PostgresBackend.open({
    connectionString: PG_TEST_URL,
    schema,
    poolSize: 8,
    statementTimeoutMs: 10_000,
  });

/** A backend on a new schema whose connections go through a relay (which counts their statements). */
async function throughRelay(
  poolSize: number,
  statementTimeoutMs: number,
): Promise<{ relay: Relay; backend: PostgresBackend }> {
  const relay = new Relay(new URL(PG_TEST_URL));
  await relay.start();
  const backend = await PostgresBackend.open({
    connectionString: relay.url(),
    schema: testSchema(),
    poolSize,
    statementTimeoutMs,
  });
  return { relay, backend };
}

describe('PostgreSQL backend', function () {
  this.timeout(60_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });

  describe('announcing writes of chosen keys to every handle (LISTEN/NOTIFY)', () => {
    const watched = Buffer.from('Swatched');
    const openAnnouncing = (schema: string) =>
      PostgresBackend.open({
        connectionString: PG_TEST_URL,
        schema,
        poolSize: 4,
        statementTimeoutMs: 10_000,
        announce: [watched],
      });

    it('tells every handle of a committed write of an announced key, and of nothing else', async () => {
      const schema = testSchema();
      const [writer, reader] = [await openAnnouncing(schema), await openAnnouncing(schema)];
      try {
        const heard: (string | undefined)[] = [];
        const stop = reader.onChange((key) => heard.push(key && Buffer.from(key).toString()));
        // A second listener on the same handle: what it hears, the first would have heard.
        const witness: (string | undefined)[] = [];
        reader.onChange((key) => witness.push(key && Buffer.from(key).toString()));
        // Listening starts with a gap (anything announced before it was not heard).
        await eventually(() => heard.length > 0, { what: 'the gap' });
        expect(heard).to.deep.equal([undefined]);
        const put = (key: Buffer) =>
          writer.atomic([], () => ({
            writes: [{ op: 'put' as const, key, value: Buffer.from('1') }],
            result: undefined,
          }));
        await put(Buffer.from('Sother'));
        await writer
          .atomic([watched], () => {
            throw new Error('refused plan');
          })
          .catch(() => undefined);
        await put(watched);
        // Notifications come in commit order: had the other key or the refused plan been announced,
        // it would have come before this one.
        await eventually(() => heard.length >= 2, { what: 'the announced write' });
        expect(heard).to.deep.equal([undefined, 'Swatched']);
        stop();
        await put(watched);
        const announced = (w: (string | undefined)[]) => w.filter((k) => k === 'Swatched').length;
        await eventually(() => announced(witness) === 2, { what: 'the write after stop()' });
        expect(heard).to.have.length(2);
      } finally {
        await writer.close();
        await reader.close();
      }
    });

    it('tells of every key under an announced prefix, however many one transaction writes (NOTIFYs split at the payload limit)', async () => {
      const schema = testSchema();
      const open = () =>
        PostgresBackend.open({
          connectionString: PG_TEST_URL,
          schema,
          poolSize: 4,
          statementTimeoutMs: 10_000,
          announcePrefixes: [Buffer.from('P')],
        });
      const [writer, reader] = [await open(), await open()];
      try {
        const heard = new Set<string>();
        reader.onChange((key) => {
          if (key) heard.add(Buffer.from(key).toString());
        });
        await eventually(async () => {
          await writer.atomic([], () => ({
            writes: [{ op: 'put' as const, key: Buffer.from('Pprobe'), value: Buffer.from('1') }],
            result: undefined,
          }));
          return heard.has('Pprobe');
        });
        // 300 keys of 60 bytes in one plan: 36,000 hex characters, several NOTIFYs.
        const keys = Array.from({ length: 300 }, (_, i) => `P${String(i).padStart(59, '0')}`);
        await writer.atomic([], () => ({
          writes: [
            ...keys.map((k) => ({
              op: 'put' as const,
              key: Buffer.from(k),
              value: Buffer.from('1'),
            })),
            { op: 'put' as const, key: Buffer.from('Qunannounced'), value: Buffer.from('1') },
          ],
          result: undefined,
        }));
        await eventually(() => keys.every((k) => heard.has(k)), { what: 'every key' });
        expect(heard.has('Qunannounced')).to.equal(false);
      } finally {
        await writer.close();
        await reader.close();
      }
    });
  });

  describe('writes asked together (group commit)', () => {
    const counter = Buffer.from('Ccounter');
    const claim = Buffer.from('Cclaim');
    const count = (bytes: Uint8Array | undefined) => Number(bytes ? Buffer.from(bytes) : 0);

    it('commits fifty writes asked together in one transaction, each seeing the ones before it', async () => {
      const { relay, backend } = await throughRelay(4, 10_000);
      try {
        const before = relay.statements;
        // Each adds one to the counter, told it holds nothing (true only for the first).
        const results = await Promise.all(
          Array.from({ length: 50 }, () =>
            backend.atomic(
              [counter],
              ([now]) => {
                const next = count(now) + 1;
                return {
                  writes: [{ op: 'put' as const, key: counter, value: Buffer.from(String(next)) }],
                  result: next,
                };
              },
              [undefined],
            ),
          ),
        );
        expect(results).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
        // BEGIN, locks and read; then writes and COMMIT: two simple queries for all fifty.
        expect(relay.statements - before).to.equal(2);
        expect(count(await backend.get(counter))).to.equal(50);
      } finally {
        await backend.close();
        await relay.cut();
      }
    });

    it('fails only the plans of a group that throw, each on what the writes before it left, and runs again a plan that writes a key it was not expected to', async () => {
      const backend = await open(testSchema());
      try {
        // Five want the claim, first come first served, in one group: one wins, four are refused on its write.
        const claims = await Promise.allSettled(
          Array.from({ length: 5 }, (_, i) =>
            backend.atomic(
              [claim],
              ([holder]) => {
                if (holder) throw new Error(`taken by ${Buffer.from(holder).toString()}`);
                return {
                  writes: [{ op: 'put' as const, key: claim, value: Buffer.from(`c${i}`) }],
                  result: i,
                };
              },
              [undefined],
            ),
          ),
        );
        expect(claims[0]!.status).to.equal('fulfilled');
        const won = claims.filter((c) => c.status === 'fulfilled');
        expect(won).to.have.length(1);
        const winner = (won[0] as PromiseFulfilledResult<number>).value;
        for (const c of claims.filter((c) => c.status === 'rejected'))
          expect(String((c as PromiseRejectedResult).reason)).to.contain(`taken by c${winner}`);
        // Told the counter is at 0 so it would write nothing, a plan finds 1 and writes 2: it goes back to
        // the queue with the counter's lock exclusive and commits in a later transaction.
        await backend.atomic([], () => ({
          writes: [{ op: 'put', key: counter, value: Buffer.from('1') }],
          result: undefined,
        }));
        const doubled = await backend.atomic(
          [counter],
          ([now]) =>
            count(now) === 0
              ? { writes: [], result: 0 }
              : {
                  writes: [
                    {
                      op: 'put' as const,
                      key: counter,
                      value: Buffer.from(String(count(now) * 2)),
                    },
                  ],
                  result: count(now) * 2,
                },
          [Buffer.from('0')],
        );
        expect(doubled).to.equal(2);
        expect(count(await backend.get(counter))).to.equal(2);
      } finally {
        await backend.close();
      }
    });
  });

  it('holds back no write behind one that shared its transaction and waits on a lock held elsewhere', async () => {
    const schema = testSchema();
    const backend = await open(schema);
    const holder = new pg.Client({ connectionString: PG_TEST_URL });
    await holder.connect();
    try {
      const put = (key: Buffer, value: string) =>
        backend.atomic(
          [key],
          () => ({
            writes: [{ op: 'put' as const, key, value: Buffer.from(value) }],
            result: value,
          }),
          [undefined],
        );
      const held = Buffer.from('Xheld');
      await put(held, 'v1');
      // Another session holds the key's row: a transaction that writes it waits until it lets go.
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM "${schema}".records WHERE k = $1 FOR UPDATE`, [held]);
      // Asked in one turn: one group, one transaction, the held key's write among them.
      const waiting = put(held, 'v2');
      const others = Array.from({ length: 10 }, (_, i) => put(Buffer.from(`Xother${i}`), 'v'));
      // Should an assertion below fail, these settle once the backend is closed: no unhandled rejection.
      for (const write of [waiting, ...others]) write.catch(() => undefined);
      const answered = await Promise.race([
        Promise.all(others),
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 3_000)),
      ]);
      expect(answered, 'the other writes, while the held key is held').to.have.length(10);
      await holder.query('COMMIT');
      expect(await waiting).to.equal('v2');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await backend.close();
    }
  });

  it('fails alone a write the database refuses, not the others that shared its transaction', async () => {
    const backend = await open(testSchema());
    try {
      // A key past PostgreSQL's limit for an index entry (2,704 bytes, after compression: so random
      // bytes); Coffer's own keys stay under 2,200.
      const tooLong = Buffer.concat([Buffer.from('X'), randomBytes(3000)]);
      const put = (key: Buffer) =>
        backend.atomic(
          [key],
          () => ({ writes: [{ op: 'put' as const, key, value: Buffer.from('v') }], result: 'ok' }),
          [undefined],
        );
      const outcomes = await Promise.allSettled([
        put(Buffer.from('Xfirst')),
        put(tooLong),
        put(Buffer.from('Xlast')),
      ]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect(await backend.get(Buffer.from('Xfirst'))).to.not.equal(undefined);
      expect(await backend.get(Buffer.from('Xlast'))).to.not.equal(undefined);
    } finally {
      await backend.close();
    }
  });

  describe('point reads asked together', () => {
    it('answers a hundred reads asked in one turn with one statement, each with its own value and last entry', async () => {
      const { relay, backend } = await throughRelay(4, 10_000);
      try {
        const key = (i: number) => Buffer.from(`Kkey-${String(i).padStart(3, '0')}`);
        const version = (i: number, v: number) => Buffer.from(`Vkey-${i}\u0000${v}`);
        const range = (i: number) => ({
          start: Buffer.from(`Vkey-${i}\u0000`),
          end: Buffer.from(`Vkey-${i}\u0001`),
        });
        await backend.atomic([], () => ({
          writes: Array.from({ length: 50 }, (_, i) => [
            { op: 'put' as const, key: key(i), value: Buffer.from(`value ${i}`) },
            ...Array.from({ length: i % 4 }, (_, v) => ({
              op: 'put' as const,
              key: version(i, v + 1),
              value: Buffer.from(`version ${v + 1} of ${i}`),
            })),
          ]).flat(),
          result: undefined,
        }));
        const before = relay.statements;
        // Keys 0..49 exist, 50..99 do not; every other read also asks for its key's newest version.
        const [gets, withLast] = await Promise.all([
          Promise.all(Array.from({ length: 50 }, (_, j) => backend.get(key(2 * j)))),
          Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              backend.getWithLast(key(2 * j + 1), range(2 * j + 1)),
            ),
          ),
        ]);
        expect(relay.statements - before).to.equal(1);
        gets.forEach((value, j) => {
          const i = 2 * j;
          expect(value && Buffer.from(value).toString()).to.equal(
            i < 50 ? `value ${i}` : undefined,
          );
        });
        withLast.forEach(({ value, last }, j) => {
          const i = 2 * j + 1;
          expect(value && Buffer.from(value).toString()).to.equal(
            i < 50 ? `value ${i}` : undefined,
          );
          const newest = i < 50 ? i % 4 : 0;
          expect(last && Buffer.from(last.key).toString()).to.equal(
            newest > 0 ? version(i, newest).toString() : undefined,
          );
          expect(last && Buffer.from(last.value).toString()).to.equal(
            newest > 0 ? `version ${newest} of ${i}` : undefined,
          );
        });
        // A read asked after a write committed sees it; the next turn's reads are the next statement.
        await backend.atomic([], () => ({
          writes: [{ op: 'put', key: key(0), value: Buffer.from('changed') }],
          result: undefined,
        }));
        const again = relay.statements;
        expect(Buffer.from((await backend.get(key(0)))!).toString()).to.equal('changed');
        expect(relay.statements - again).to.equal(1);
      } finally {
        await backend.close();
        await relay.cut();
      }
    });

    it('fails every read of a batch the database could not answer, and answers the next batch', async () => {
      const { relay, backend } = await throughRelay(2, 2_000);
      try {
        const port = relay.port;
        await relay.cut();
        const outcomes = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) => backend.get(Buffer.from(`Kk${i}`))),
        );
        for (const outcome of outcomes) {
          expect(outcome.status).to.equal('rejected');
          expect((outcome as PromiseRejectedResult).reason).to.be.instanceOf(
            StorageUnavailableError,
          );
        }
        await relay.start(port);
        expect(await backend.get(Buffer.from('Kk1'))).to.equal(undefined);
      } finally {
        await backend.close();
        await relay.cut();
      }
    });
  });
});
