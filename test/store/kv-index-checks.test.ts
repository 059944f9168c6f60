import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { sodiumReady } from '../../src/crypto/aead.js';
import { LocalKeyProvider } from '../../src/keys/local-provider.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { KvRecords } from '../../src/store/kv-records.js';
import { type NewVersion, packedVersionRecord } from '../../src/store/kv-version-writes.js';
import { metaKey } from '../../src/store/layout.js';
import { RecordIntegrityError, type RecordSeal } from '../../src/store/record-seal.js';
import { tempDir } from '../support/temp-dirs.js';

/** The store's real seal, with every MAC check of a key index counted. */
function counted(seal: RecordSeal): { seal: RecordSeal; indexChecks: () => number } {
  let checks = 0;
  const proxy = new Proxy(seal, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name !== 'verified') return typeof value === 'function' ? value.bind(target) : value;
      return (kind: string, ...rest: unknown[]) => {
        if (kind === 'kv-meta') checks++;
        return (value as (...a: unknown[]) => unknown).call(target, kind, ...rest);
      };
    },
  });
  return { seal: proxy, indexChecks: () => checks };
}

describe('the key index: the bytes a write made are known good, any other bytes are checked', function () {
  this.timeout(30_000);
  let dir: string;
  let storage: LmdbBackend;
  let holder: KeyringHolder;
  let records: KvRecords;
  let indexChecks: () => number;
  const ref = { namespace: 'app', key: 'db' };

  const version = (value: string): NewVersion => ({
    type: 'config',
    createdAt: Date.now(),
    stamp: holder.stamp,
    seal: (v) =>
      packedVersionRecord(holder.current(), {
        ...ref,
        version: v,
        type: 'config',
        value,
        createdAt: Date.now(),
      }),
    check: () => undefined,
    alongside: [],
    actor: 'test',
  });

  beforeEach(async () => {
    await sodiumReady();
    dir = tempDir();
    storage = new LmdbBackend({ path: join(dir, 'lmdb') });
    ({ holder } = await KeyringHolder.open(
      storage,
      new LocalKeyProvider(randomBytes(32)),
      Date.now(),
    ));
    const spy = counted(holder.recordSeal);
    indexChecks = spy.indexChecks;
    records = new KvRecords(storage, spy.seal, holder);
  });

  afterEach(async () => {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('checks no MAC again for an index it wrote itself: an overwrite, then a read, of the key', async () => {
    expect((await records.append(ref, version('one'))).version).to.equal(1);
    const before = indexChecks();
    expect((await records.append(ref, version('two'))).version).to.equal(2);
    expect((await records.latest(ref))!.meta.latest).to.equal(2);
    expect(indexChecks()).to.equal(before);
  });

  it('checks the MAC of other bytes at the same key, and refuses them when changed: a write, then a read', async () => {
    await records.append(ref, version('one'));
    const mKey = metaKey(ref.namespace, ref.key);
    const written = Buffer.from((await storage.get(mKey))!);
    const changed = Buffer.from(written);
    changed[changed.length - 1]! ^= 0x01;
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key: mKey, value: changed }],
      result: undefined,
    }));
    const before = indexChecks();
    let refused: unknown;
    await records.append(ref, version('two')).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(RecordIntegrityError);
    refused = undefined;
    await records.latest(ref).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(RecordIntegrityError);
    expect(indexChecks()).to.be.greaterThan(before);
    // The bytes it wrote, put back, are what it knows: read without another check.
    await storage.atomic([], () => ({
      writes: [{ op: 'put', key: mKey, value: written }],
      result: undefined,
    }));
    const checks = indexChecks();
    expect((await records.latest(ref))!.meta.latest).to.equal(1);
    expect(indexChecks()).to.equal(checks);
  });
});
