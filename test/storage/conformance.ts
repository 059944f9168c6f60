/**
 * The behaviour every StorageBackend must have. A backend's test file calls `storageConformance` with a
 * factory; the same suite runs against each backend.
 */
import { expect } from 'chai';
import type { StorageBackend } from '../../src/storage/backend.js';

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

    it('keeps what was written across a close and reopen', async () => {
      await putAll(storage, { kept: 'yes' });
      storage = await factory.reopen(storage);
      expect(str(await storage.get(b('kept')))).to.equal('yes');
    });
  });
}
