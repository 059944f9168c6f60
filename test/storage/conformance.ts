/**
 * The behaviour every StorageBackend must have. A backend's test file calls `storageConformance` with a
 * factory; the same suite runs against each backend.
 */
import { expect } from 'chai';
import {
  hasFollowingReads,
  type StorageBackend,
  type StorageWrite,
} from '../../src/storage/backend.js';

const b = (text: string): Buffer => Buffer.from(text, 'latin1');
const str = (bytes: Uint8Array | undefined): string | undefined =>
  bytes === undefined ? undefined : Buffer.from(bytes).toString('latin1');

async function collect(
  iter: AsyncIterable<{ key: Uint8Array; value: Uint8Array }>,
): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for await (const e of iter) out.push([str(e.key)!, str(e.value)!]);
  return out;
}

async function putAll(storage: StorageBackend, entries: Record<string, string>): Promise<void> {
  await storage.atomic([], () => ({
    writes: Object.entries(entries).map(([k, v]) => ({
      op: 'put' as const,
      key: b(k),
      value: b(v),
    })),
    result: undefined,
  }));
}

export interface BackendFactory {
  /** A new, empty backend. */
  create(): Promise<StorageBackend>;
  /** Closes `backend` and opens the same store again. */
  reopen(backend: StorageBackend): Promise<StorageBackend>;
  /** A second handle on the store `backend` is open on, as another server would have. */
  another(backend: StorageBackend): Promise<StorageBackend>;
  /** Whether the backend offers FollowingReads (the suite checks the claim, then the capability). */
  readonly followingReads: boolean;
}

export function storageConformance(name: string, factory: BackendFactory): void {
  describe(`${name} storage conformance`, () => {
    let storage: StorageBackend;
    beforeEach(async () => {
      storage = await factory.create();
    });
    afterEach(async () => {
      await storage.close();
    });

    it('returns undefined for a missing key and the bytes written for a present one', async () => {
      expect(await storage.get(b('nope'))).to.equal(undefined);
      await putAll(storage, { a: '1', 'a\0b': '\x00\xff' });
      expect(str(await storage.get(b('a')))).to.equal('1');
      expect(str(await storage.get(b('a\0b')))).to.equal('\x00\xff');
    });

    it('returns values that later writes do not change', async () => {
      await putAll(storage, { k: 'first' });
      const first = await storage.get(b('k'));
      await putAll(storage, { k: 'second' });
      expect(str(first)).to.equal('first');
    });

    it('scans a range in byte order, end exclusive, with a limit', async () => {
      await putAll(storage, { b: '2', a: '1', 'a\x01': 'x', c: '3', d: '4' });
      expect(await collect(storage.scan({ start: b('a'), end: b('d') }))).to.deep.equal([
        ['a', '1'],
        ['a\x01', 'x'],
        ['b', '2'],
        ['c', '3'],
      ]);
      expect(
        await collect(storage.scan({ start: b('a\x00'), end: b('z'), limit: 2 })),
      ).to.deep.equal([
        ['a\x01', 'x'],
        ['b', '2'],
      ]);
      expect(await collect(storage.scan({ start: b('x'), end: b('z') }))).to.deep.equal([]);
    });

    it('stops reading when a scan is abandoned early', async () => {
      await putAll(storage, { a: '1', b: '2', c: '3' });
      for await (const entry of storage.scan({ start: b('a'), end: b('z') })) {
        expect(str(entry.key)).to.equal('a');
        break;
      }
      await putAll(storage, { d: '4' });
      expect(str(await storage.get(b('d')))).to.equal('4');
    });

    it("reads a key and the last entry of a range together: the range's start included, its end excluded", async () => {
      await putAll(storage, {
        idx: 'meta',
        'r\x00': 'first',
        'r\x00a': 'a',
        'r\x00b': 'b',
        'r\x01': 'end',
      });
      const both = await storage.getWithLast(b('idx'), { start: b('r\x00'), end: b('r\x01') });
      expect(str(both.value)).to.equal('meta');
      expect([str(both.last?.key), str(both.last?.value)]).to.deep.equal(['r\x00b', 'b']);
      const onlyStart = await storage.getWithLast(b('none'), {
        start: b('r\x00'),
        end: b('r\x00a'),
      });
      expect(onlyStart.value).to.equal(undefined);
      expect(str(onlyStart.last?.key)).to.equal('r\x00');
      const empty = await storage.getWithLast(b('idx'), { start: b('s'), end: b('t') });
      expect(empty.last).to.equal(undefined);
    });

    it('has the optional capabilities it is said to have', () => {
      expect(hasFollowingReads(storage)).to.equal(factory.followingReads);
    });

    if (factory.followingReads)
      it('reads a key and then the keys it names from one state (FollowingReads)', async () => {
        if (!hasFollowingReads(storage)) expect.fail('no FollowingReads');
        await putAll(storage, { idx: 'v\x00b', 'v\x00b': 'newest' });
        const read = await storage.getFollowing(b('idx'), (value) => [
          Buffer.from(value),
          Buffer.concat([Buffer.from(value), b('+')]),
        ]);
        expect(str(read.value)).to.equal('v\x00b');
        expect(read.followed.map(str)).to.deep.equal(['newest', undefined]);
        // Writes landing while the read runs are not seen by it: `follow` runs inside the one read.
        const racing = storage.getFollowing(b('idx'), () => {
          void putAll(storage, { 'v\x00b': 'later' });
          return [b('v\x00b')];
        });
        expect((await racing).followed.map(str)).to.deep.equal(['newest']);
        let called = false;
        const none = await storage.getFollowing(b('missing'), () => {
          called = true;
          return [];
        });
        expect([none.value, none.followed, called]).to.deep.equal([undefined, [], false]);
        const refused = new Error('refused by follow');
        let caught: unknown;
        await storage
          .getFollowing(b('idx'), () => {
            throw refused;
          })
          .catch((err: unknown) => {
            caught = err;
          });
        expect(caught).to.equal(refused);

        // Several at once: each key and what it names, from one state, in order.
        await putAll(storage, { idx2: 'v\x00c', 'v\x00c': 'third' });
        const many = await storage.getFollowingMany(
          [b('idx'), b('missing'), b('idx2')],
          (value, index) => {
            if (index === 0) void putAll(storage, { 'v\x00c': 'changed meanwhile' });
            return [Buffer.from(value)];
          },
        );
        expect(many.map((r) => [str(r.value), r.followed.map(str)])).to.deep.equal([
          ['v\x00b', ['later']],
          [undefined, []],
          ['v\x00c', ['third']],
        ]);
      });

    it('reads everything from one state of the store while writes go on', async () => {
      await putAll(storage, { 'e-1': 'a', 'e-2': 'b', 'e-3': 'c' });
      const seen: [string, string][] = [];
      for await (const e of storage.everything()) {
        if (seen.length === 0) {
          // Written after the read began: not part of it.
          await putAll(storage, { 'e-0': 'late', 'e-4': 'late', 'e-2': 'changed' });
        }
        seen.push([str(e.key)!, str(e.value)!]);
      }
      expect(seen).to.deep.equal([
        ['e-1', 'a'],
        ['e-2', 'b'],
        ['e-3', 'c'],
      ]);
    });

    it('hands a plan the current values and applies its puts and deletes', async () => {
      await putAll(storage, { x: '1', y: '2' });
      const result = await storage.atomic([b('x'), b('missing')], ([x, missing]) => ({
        writes: [
          { op: 'put', key: b('x'), value: b(`${str(x)}+`) },
          { op: 'delete', key: b('y') },
        ],
        result: { x: str(x), missing },
      }));
      expect(result).to.deep.equal({ x: '1', missing: undefined });
      expect(str(await storage.get(b('x')))).to.equal('1+');
      expect(await storage.get(b('y'))).to.equal(undefined);
    });

    it('runs a plan on the stored values whatever the caller expected them to be', async () => {
      await putAll(storage, { counted: '5', other: 'x' });
      const [counted, fresh] = [b('counted'), b('fresh')];
      // The caller expects stale values: "counted" absent and "fresh" present.
      const result = await storage.atomic(
        [counted, fresh],
        ([c, f]) => {
          const next = Number(str(c) ?? '0') + 1;
          const writes: StorageWrite[] = [{ op: 'put', key: counted, value: b(String(next)) }];
          // Only when "fresh" is absent is it created: a write the stale expectation did not foresee.
          if (f === undefined) writes.push({ op: 'put', key: fresh, value: b('made') });
          return { writes, result: next };
        },
        [undefined, b('stale')],
      );
      expect(result).to.equal(6);
      expect(str(await storage.get(counted))).to.equal('6');
      expect(str(await storage.get(fresh))).to.equal('made');
    });

    it('writes nothing when a plan throws, and rejects with its error', async () => {
      await putAll(storage, { x: '1' });
      const boom = new Error('boom');
      let caught: unknown;
      try {
        await storage.atomic([b('x')], () => {
          throw boom;
        });
      } catch (err) {
        caught = err;
      }
      expect(caught).to.equal(boom);
      expect(str(await storage.get(b('x')))).to.equal('1');
    });

    it('isolates concurrent read-modify-write plans on one key: none is lost', async () => {
      const key = b('counter');
      const increments = Array.from({ length: 200 }, () =>
        storage.atomic([key], ([current]) => {
          const next = Number(str(current) ?? '0') + 1;
          return { writes: [{ op: 'put', key, value: b(String(next)) }], result: next };
        }),
      );
      const results = await Promise.all(increments);
      expect([...results].sort((x, y) => x - y)).to.deep.equal(
        Array.from({ length: 200 }, (_, i) => i + 1),
      );
      expect(str(await storage.get(key))).to.equal('200');
    });

    it('stores entries under keys only their writer touches (putOwn) all at once, durably, replacing on a second write', async () => {
      await storage.putOwn([]);
      await storage.putOwn([
        { key: b('own-1'), value: b('one') },
        { key: b('own-\xff'), value: b('\x00\xff') },
      ]);
      expect(await collect(storage.scan({ start: b('own-'), end: b('own.') }))).to.deep.equal([
        ['own-1', 'one'],
        ['own-\xff', '\x00\xff'],
      ]);
      await storage.putOwn([{ key: b('own-1'), value: b('one, longer') }]);
      storage = await factory.reopen(storage);
      expect(str(await storage.get(b('own-1')))).to.equal('one, longer');
      expect(str(await storage.get(b('own-\xff')))).to.equal('\x00\xff');
    });

    it('lists the distinct segments beneath a prefix, in order, each once, after a seek, up to a limit', async () => {
      await putAll(storage, {
        'p\x01a\x00k1': '', // segment "a", three keys
        'p\x01a\x00k2': '',
        'p\x01a\x01deeper\x00k': '',
        'p\x01ab\x00k': '', // "ab" sorts after "a" and its keys
        'p\x01b\x01c\x01d\x00k': '',
        'p\x01\xe9t\xe9\x00k': '', // bytes of 0x80 and above
        'p\x02other': '', // outside the range
        'p\x00direct': '', // before it
      });
      const prefix = b('p\x01');
      const all = { start: prefix, end: b('p\x02') };
      const names = (found: Uint8Array[]) => found.map((s) => str(s));
      expect(names(await storage.segments(prefix, { ...all, limit: 100 }))).to.deep.equal([
        'a',
        'ab',
        'b',
        '\xe9t\xe9',
      ]);
      expect(names(await storage.segments(prefix, { ...all, limit: 2 }))).to.deep.equal([
        'a',
        'ab',
      ]);
      // From past segment "ab" (its keys end before "ab" 0x02).
      const after = { start: b('p\x01ab\x02'), end: all.end, limit: 100 };
      expect(names(await storage.segments(prefix, after))).to.deep.equal(['b', '\xe9t\xe9']);
      expect(
        await storage.segments(b('q\x01'), { start: b('q\x01'), end: b('q\x02'), limit: 5 }),
      ).to.deep.equal([]);
    });

    it('keeps what was written across a close and reopen', async () => {
      await putAll(storage, { kept: 'yes' });
      storage = await factory.reopen(storage);
      expect(str(await storage.get(b('kept')))).to.equal('yes');
    });

    describe('with a second handle on the same store', () => {
      let other: StorageBackend;
      beforeEach(async () => {
        other = await factory.another(storage);
      });
      afterEach(async () => {
        await other.close();
      });

      it("sees the other handle's writes, and isolates read-modify-write plans across handles", async () => {
        await putAll(other, { shared: 'from the other' });
        expect(str(await storage.get(b('shared')))).to.equal('from the other');
        const key = b('counter');
        const increment = (handle: StorageBackend) =>
          handle.atomic([key], ([current]) => {
            const next = Number(str(current) ?? '0') + 1;
            return { writes: [{ op: 'put', key, value: b(String(next)) }], result: next };
          });
        const results = await Promise.all(
          Array.from({ length: 100 }, (_, i) => increment(i % 2 ? storage : other)),
        );
        expect([...results].sort((x, y) => x - y)).to.deep.equal(
          Array.from({ length: 100 }, (_, i) => i + 1),
        );
        expect(str(await other.get(key))).to.equal('100');
      });

      it('protects keys a plan reads but does not write: no write skew', async () => {
        // Each plan reads both keys and claims one only while neither is claimed: never both claimed.
        for (let round = 0; round < 20; round++) {
          const [x, y] = [b(`skew-${round}-x`), b(`skew-${round}-y`)];
          const claim = (handle: StorageBackend, mine: Buffer) =>
            handle.atomic([x, y], ([cx, cy]) =>
              cx === undefined && cy === undefined
                ? { writes: [{ op: 'put', key: mine, value: b('claimed') }], result: true }
                : { writes: [], result: false },
            );
          const won = await Promise.all([claim(storage, x), claim(other, y)]);
          expect(won.filter(Boolean), `round ${round}`).to.have.length(1);
          const held = [await storage.get(x), await storage.get(y)].filter((v) => v !== undefined);
          expect(held, `round ${round}`).to.have.length(1);
        }
      });

      it('creates a row that did not exist exactly once when many plans race to create it', async () => {
        const key = b('created-once');
        const attempts = Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? storage : other).atomic([key], ([current]) =>
            current === undefined
              ? { writes: [{ op: 'put', key, value: b(String(i)) }], result: i }
              : { writes: [], result: -1 },
          ),
        );
        const winners = (await Promise.all(attempts)).filter((r) => r >= 0);
        expect(winners).to.have.length(1);
        expect(str(await storage.get(key))).to.equal(String(winners[0]));
      });
    });

    it('orders and keeps keys with bytes of 0x80 and above', async () => {
      const keys = [
        Buffer.from([0x01]),
        Buffer.from([0x7f, 0xff]),
        Buffer.from([0x80]),
        Buffer.from([0x80, 0x00]),
        Buffer.from([0xc3, 0xa9]),
        Buffer.from([0xff, 0xfe]),
      ];
      await storage.atomic([], () => ({
        writes: [...keys]
          .reverse()
          .map((key, i) => ({ op: 'put' as const, key, value: Buffer.from([i, 0xff]) })),
        result: undefined,
      }));
      const seen: Buffer[] = [];
      for await (const e of storage.scan({
        start: Buffer.from([0x00]),
        end: Buffer.from([0xff, 0xff]),
      }))
        seen.push(Buffer.from(e.key));
      expect(seen.map((k) => k.toString('hex'))).to.deep.equal(keys.map((k) => k.toString('hex')));
      expect(Buffer.from((await storage.get(Buffer.from([0xff, 0xfe])))!).toString('hex')).to.equal(
        '00ff',
      );
    });

    it('scans many pages while writes run: every key that was there throughout is seen once, in order', async () => {
      const key = (i: number) => b(`page-${String(i).padStart(5, '0')}`);
      await storage.atomic([], () => ({
        writes: Array.from({ length: 2500 }, (_, i) => ({
          op: 'put' as const,
          key: key(i * 2),
          value: b('v'),
        })),
        result: undefined,
      }));
      const seen: string[] = [];
      let writes = 0;
      for await (const e of storage.scan({ start: b('page-'), end: b('page.') })) {
        seen.push(str(e.key)!);
        // Odd keys appear between the even ones while the scan runs.
        if (seen.length % 100 === 0) {
          const n = writes++;
          await storage.atomic([], () => ({
            writes: [{ op: 'put', key: key(n * 40 + 1), value: b('new') }],
            result: undefined,
          }));
        }
      }
      expect(seen).to.deep.equal([...seen].sort());
      expect(new Set(seen).size).to.equal(seen.length);
      const evens = seen.filter((k) => Number(k.slice(5)) % 2 === 0);
      expect(evens).to.have.length(2500);
      expect(writes).to.be.greaterThan(20);
    });

    it('applies a plan that reads and writes 10,000 keys in one transaction', async () => {
      const keys = Array.from({ length: 10_000 }, (_, i) => b(`big-${String(i).padStart(5, '0')}`));
      await storage.atomic(keys, (current) => {
        expect(current.every((v) => v === undefined)).to.equal(true);
        return {
          writes: keys.map((key) => ({ op: 'put' as const, key, value: b('1') })),
          result: undefined,
        };
      });
      const total = await storage.atomic(keys, (current) => ({
        writes: keys.map((key, i) => ({
          op: 'put' as const,
          key,
          value: b(String(Number(str(current[i])) + 1)),
        })),
        result: current.length,
      }));
      expect(total).to.equal(10_000);
      let n = 0;
      for await (const e of storage.scan({ start: b('big-'), end: b('big.') })) {
        expect(str(e.value)).to.equal('2');
        n++;
      }
      expect(n).to.equal(10_000);
    });
  });
}
