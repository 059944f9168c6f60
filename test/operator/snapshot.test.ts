import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { pack, unpack } from 'msgpackr';
import type { KeyProvider } from '../../src/keys/key-provider.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import type { StorageBackend, StorageEntry } from '../../src/storage/backend.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { PostgresBackend } from '../../src/storage/postgres-backend.js';
import { wrapContext } from '../../src/store/keyring-record.js';
import { KEYRING_KEY } from '../../src/store/keyring-store.js';
import { EVENTS_RANGE, positionOf } from '../../src/store/layout.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { Relay } from '../support/pg-relay.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { runCoffer } from '../support/process.js';

/** The positions of the events `storage` holds, in order. */
async function eventPositions(storage: StorageBackend): Promise<number[]> {
  const positions: number[] = [];
  for await (const { key } of storage.scan(EVENTS_RANGE)) positions.push(positionOf(key));
  return positions;
}

/** The PostgreSQL store `schema` of the test database, opened directly. */
const openPostgresStore = (schema: string): Promise<PostgresBackend> =>
  PostgresBackend.open({
    connectionString: PG_TEST_URL,
    schema,
    poolSize: 2,
    statementTimeoutMs: 10_000,
  });

/** A snapshot's records (key length, key, value length, value, …), each as [key, value]. */
function framesOf(records: Buffer): [Buffer, Buffer][] {
  const frames: [Buffer, Buffer][] = [];
  for (let at = 0; at < records.length; ) {
    const keyLength = records.readUInt32BE(at);
    const key = records.subarray(at + 4, at + 4 + keyLength);
    at += 4 + keyLength;
    const valueLength = records.readUInt32BE(at);
    frames.push([key, records.subarray(at + 4, at + 4 + valueLength)]);
    at += 4 + valueLength;
  }
  return frames;
}

function framed(frames: [Buffer, Buffer][]): Buffer {
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  return Buffer.concat(frames.flatMap(([k, v]) => [u32(k.length), k, u32(v.length), v]));
}

/** The records with their keyring record as a release before epochs stored it: wrapped again without `e`. */
async function withoutEpoch(records: Buffer, provider: KeyProvider): Promise<Buffer> {
  const frames = framesOf(records);
  for (const frame of frames) {
    if (!frame[0].equals(KEYRING_KEY)) continue;
    const stored = unpack(frame[1]) as { wrapped: Uint8Array; instance: string };
    const context = wrapContext(stored.instance);
    const inner = unpack(await provider.unwrap(stored.wrapped, context)) as Record<string, unknown>;
    delete inner.e;
    frame[1] = pack({ ...stored, wrapped: await provider.wrap(pack(inner), context) });
  }
  return framed(frames);
}

/** The SHA-256 of the keyring record among `records`, as a snapshot's header names it. */
async function keyringSha(records: Buffer): Promise<string> {
  const frame = framesOf(records).find(([k]) => k.equals(KEYRING_KEY))!;
  return createHash('sha256').update(frame[1]).digest('hex');
}

describe('snapshots: coffer operator snapshot and restore (LMDB → PostgreSQL → LMDB)', function () {
  this.timeout(180_000);
  before(async function () {
    await requirePostgres(this);
  });
  after(async () => {
    await dropTestSchemas();
  });
  /** Source servers, closed after each test even when an assertion failed. */
  const sources: TestCoffer[] = [];
  afterEach(async () => {
    for (const c of sources.splice(0)) await c.close();
  });
  const source = async (): Promise<TestCoffer> => {
    const c = await startTestCoffer();
    sources.push(c);
    return c;
  };

  /**
   * The settings that name a store and its master key, as the CLI reads them (it needs no token; snapshot
   * and restore need the key, whose keyring authenticates the file).
   */
  const lmdbEnv = (c: TestCoffer | string, key?: string): Record<string, string> => ({
    COFFER_DATA_DIR: typeof c === 'string' ? c : c.config.data_dir,
    COFFER_LOG_LEVEL: 'silent',
    COFFER_MASTER_KEY_FILE:
      typeof c === 'string' ? (key ?? '/nonexistent/master.key') : c.config.master_key_file,
  });
  const pgEnv = (schema: string, key = '/nonexistent/master.key'): Record<string, string> => ({
    COFFER_STORAGE: 'postgres',
    COFFER_PG_URL: PG_TEST_URL,
    COFFER_PG_SCHEMA: schema,
    COFFER_DATA_DIR: join(tempDir(), 'data'),
    COFFER_LOG_LEVEL: 'silent',
    COFFER_MASTER_KEY_FILE: key,
  });

  /** A server on the PostgreSQL store `schema`, with `a`'s master key and root token. */
  const serverOnPostgres = (
    a: TestCoffer,
    schema: string,
    env: Record<string, string> = {},
  ): Promise<TestCoffer> =>
    startTestCoffer({
      rootToken: a.rootToken,
      env: {
        COFFER_STORAGE: 'postgres',
        COFFER_PG_URL: PG_TEST_URL,
        COFFER_PG_SCHEMA: schema,
        COFFER_MASTER_KEY_FILE: a.config.master_key_file,
        ...env,
      },
    });

  it('copies a serving store whole — every acknowledged value byte for byte, tokens, audit checkpoints — into PostgreSQL and back, checking each file', async () => {
    const a = await source();
    const reader = await a.token({ role: 'reader', metadata: { name: 'drill-reader' } });
    const acknowledged = new Map<string, string>();
    for (let i = 0; i < 300; i++) {
      const value = `v${i}-${'ü'.repeat(i % 5)}-\u{1F511}`;
      const res = await a.put(`drill/ns${i % 7}/k${i}`, value, i % 4 ? 'secret' : 'config');
      expect(res.status).to.equal(201);
      acknowledged.set(`drill/ns${i % 7}/k${i}`, value);
    }
    const dir = tempDir();
    const first = join(dir, 'first.snapshot');
    // Writes go on while the snapshot is taken; those acknowledged before it began must all be in it.
    let writing = true;
    const load = (async () => {
      for (let i = 0; writing; i++) await a.put(`drill/during/k${i}`, `during-${i}`);
    })();
    const taken = await runCoffer(['operator', 'snapshot', '--out', first], lmdbEnv(a));
    writing = false;
    await load;
    expect(taken.code, taken.stderr).to.equal(0);
    expect(taken.stdout).to.match(/^snapshot written to .*: \d+ records/);
    expect(statSync(first).mode & 0o777).to.equal(0o600);
    expect(readFileSync(first).includes(Buffer.from('v1-ü'))).to.equal(false); // sealed, as stored
    // The file is never overwritten.
    expect((await runCoffer(['operator', 'snapshot', '--out', first], lmdbEnv(a))).code).to.equal(
      2,
    );

    // Into PostgreSQL; a server there with A's key, root token and a copy of A's audit files.
    const schema = testSchema();
    const key = a.config.master_key_file;
    const restored = await runCoffer(['operator', 'restore', '--from', first], pgEnv(schema, key));
    expect(restored.code, restored.stderr).to.equal(0);
    const auditCopy = join(tempDir(), 'audit');
    cpSync(a.config.audit.dir!, auditCopy, { recursive: true });
    const b = await serverOnPostgres(a, schema, { COFFER_AUDIT_DIR: auditCopy });
    try {
      for (const [path, value] of acknowledged) {
        const read = await b.call('GET', `/v1/kv/${path}`, { token: reader });
        expect(read.status, path).to.equal(200);
        expect(read.body.value, path).to.equal(value);
      }
      expect((await b.call('GET', '/v1/auth/me', { token: reader })).body.metadata).to.deep.equal({
        name: 'drill-reader',
      });
      const verify = await b.call('GET', '/v1/sys/audit/verify');
      expect(verify.body.intact, JSON.stringify(verify.body)).to.equal(true);
      // The copy goes on numbering events after the highest position it holds (store/event-log.ts,
      // alignPositions): on PostgreSQL its sequence starts past the events that came from LMDB, so the
      // next change overwrites none of them.
      const fromA = await eventPositions(b.storage);
      expect((await b.put('drill/after-copy', 'b')).status).to.equal(201);
      const onB = await eventPositions(b.storage);
      expect(onB.length).to.equal(fromA.length + 1);
      expect(onB.at(-1)).to.be.above(fromA.at(-1)!);

      // And back, from PostgreSQL into a fresh LMDB store.
      const second = join(dir, 'second.snapshot');
      const again = await runCoffer(['operator', 'snapshot', '--out', second], pgEnv(schema, key));
      expect(again.code, again.stderr).to.equal(0);
      const back = join(tempDir(), 'data');
      expect(
        (await runCoffer(['operator', 'restore', '--from', second], lmdbEnv(back, key))).code,
      ).to.equal(0);
      const c = await startTestCoffer({
        dataDir: join(back, '..'),
        rootToken: a.rootToken,
        ownsDir: false,
        env: { COFFER_MASTER_KEY_FILE: a.config.master_key_file },
      });
      try {
        for (const [path, value] of acknowledged) {
          const read = await c.call('GET', `/v1/kv/${path}`, { token: reader });
          expect(read.body.value, path).to.equal(value);
        }
        // Back on LMDB, whose position record PostgreSQL never wrote: the next event follows B's.
        expect(await eventPositions(c.storage)).to.deep.equal(onB);
        expect((await c.put('drill/after-return', 'c')).status).to.equal(201);
        expect(await eventPositions(c.storage)).to.deep.equal([...onB, onB.at(-1)! + 1]);
      } finally {
        await c.close();
      }
    } finally {
      await b.close();
    }
  });

  it('moves a store from LMDB to PostgreSQL with migrate-storage, and refuses a target that is not empty', async () => {
    // Its own directory (kept after close: the master key file is in it), stopped before the move.
    const a = await startTestCoffer({ dataDir: tempDir() });
    const reader = await a.token({ role: 'reader' });
    for (let i = 0; i < 50; i++) await a.put(`move/k${i}`, `value-${i}-\u00e9`);
    await a.close();
    const schema = testSchema();
    const env = { ...lmdbEnv(a), COFFER_PG_SCHEMA: schema };
    const moved = await runCoffer(
      ['operator', 'migrate-storage', '--to', `postgres:${PG_TEST_URL}`],
      env,
    );
    expect(moved.code, moved.stderr).to.equal(0);
    expect(moved.stdout).to.match(/^copied \d+ records to PostgreSQL and counted them there/);
    const again = await runCoffer(
      ['operator', 'migrate-storage', '--to', `postgres:${PG_TEST_URL}`],
      env,
    );
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/not empty/);

    const b = await serverOnPostgres(a, schema);
    try {
      for (let i = 0; i < 50; i++) {
        const read = await b.call('GET', `/v1/kv/move/k${i}`, { token: reader });
        expect(read.body.value).to.equal(`value-${i}-\u00e9`);
      }
    } finally {
      await b.close();
    }
  });

  it('after migrate-storage from LMDB, every server on the store verifies and searches the same log: the old host copies its chains into the store at its first start', async () => {
    const a = await startTestCoffer({ dataDir: tempDir() });
    for (let i = 0; i < 5; i++) await a.put(`same/k${i}`, `v${i}`);
    for (let i = 0; i < 3; i++) await a.call('GET', '/v1/kv/same/k1');
    await a.close();
    const schema = testSchema();
    const moved = await runCoffer(
      ['operator', 'migrate-storage', '--to', `postgres:${PG_TEST_URL}`],
      {
        ...lmdbEnv(a),
        COFFER_PG_SCHEMA: schema,
      },
    );
    expect(moved.code, moved.stderr).to.equal(0);
    // The old host, with its audit files, then a new one.
    const old = await serverOnPostgres(a, schema, { COFFER_AUDIT_DIR: a.config.audit.dir! });
    const fresh = await serverOnPostgres(a, schema);
    try {
      for (const server of [old, fresh]) {
        const verify = await server.call('GET', '/v1/sys/audit/verify');
        expect(verify.body.intact, JSON.stringify(verify.body)).to.equal(true);
      }
      const searched = await Promise.all(
        [old, fresh].map(async (server) =>
          (
            await server.call('GET', '/v1/sys/audit?key=same/k1&action=read&limit=1000')
          ).body.entries.map((e: { chain: string; seq: number }) => `${e.chain}:${e.seq}`),
        ),
      );
      expect(searched[0]).to.have.length(3);
      expect(searched[1]).to.deep.equal(searched[0]);
    } finally {
      await fresh.close();
      await old.close();
    }
  });

  it('goes on with a migrate-storage that was cut off (--resume), after checking what the target holds; refuses one that differs', async () => {
    const a = await startTestCoffer({ dataDir: tempDir() });
    const reader = await a.token({ role: 'reader' });
    for (let i = 0; i < 60; i++) await a.put(`resume/k${i}`, `value-${i}`);
    await a.close();
    // What a copy cut off after its first batches leaves: the source's first records in key order, no keyring.
    const source = new LmdbBackend({ path: join(a.config.data_dir, 'lmdb') });
    const records: StorageEntry[] = [];
    for await (const entry of source.everything())
      if (Buffer.compare(entry.key, KEYRING_KEY) !== 0) records.push(entry);
    await source.close();
    const cutOff = async (schema: string, change?: number): Promise<void> => {
      const target = await openPostgresStore(schema);
      try {
        await target.atomic([], () => ({
          writes: records.slice(0, 40).map((e, i) => ({
            op: 'put' as const,
            key: e.key,
            value: i === change ? Buffer.from('changed') : e.value,
          })),
          result: undefined,
        }));
      } finally {
        await target.close();
      }
    };
    const move = (schema: string, ...flags: string[]) =>
      runCoffer(['operator', 'migrate-storage', '--to', `postgres:${PG_TEST_URL}`, ...flags], {
        ...lmdbEnv(a),
        COFFER_PG_SCHEMA: schema,
      });

    const differs = testSchema();
    await cutOff(differs, 7);
    const refused = await move(differs, '--resume');
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/does not hold the beginning of a copy of this store/);

    const schema = testSchema();
    await cutOff(schema);
    const plain = await move(schema);
    expect(plain.code).to.equal(1);
    expect(plain.stderr).to.match(/not empty.*--resume/);
    const resumed = await move(schema, '--resume');
    expect(resumed.code, resumed.stderr).to.equal(0);
    expect(resumed.stdout).to.match(/^resumed after the 40 records an earlier copy left/);
    expect((await move(schema, '--resume')).stderr).to.match(/already holds a whole copy/);

    const b = await serverOnPostgres(a, schema);
    try {
      for (let i = 0; i < 60; i++) {
        const read = await b.call('GET', `/v1/kv/resume/k${i}`, { token: reader });
        expect(read.body.value).to.equal(`value-${i}`);
      }
    } finally {
      await b.close();
    }
  });

  it('never takes a password on the command line: --to postgres:URL with one is refused', async () => {
    const url = new URL(PG_TEST_URL);
    url.password = 'not-on-the-command-line';
    const refused = await runCoffer(
      ['operator', 'migrate-storage', '--to', `postgres:${url.toString()}`],
      lmdbEnv(tempDir()),
    );
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.match(/must not hold a password/);
    expect(refused.stderr).to.not.include('not-on-the-command-line');
  });

  it('heads a snapshot with its format, counts, keyring and checksum; refuses a header that disagrees with the records; still reads version 1', async () => {
    const a = await source();
    for (let i = 0; i < 20; i++) await a.put(`h/k${i}`, `value ${i}`);
    const dir = tempDir();
    const file = join(dir, 'a.snapshot');
    const taken = await runCoffer(['operator', 'snapshot', '--out', file], lmdbEnv(a));
    expect(taken.code, taken.stderr).to.equal(0);
    const bytes = readFileSync(file);
    const newline = bytes.indexOf(0x0a);
    expect(newline + 1).to.equal(4096);
    const header = JSON.parse(bytes.subarray(0, newline).toString());
    expect(header).to.include({ format: 'coffer-snapshot', version: 3 });
    expect(header.mac).to.match(/^[0-9a-f]{64}$/);
    expect(taken.stdout).to.contain(`${header.records} records`);
    expect(taken.stdout).to.contain(`sha256 ${header.sha256}`);
    expect(taken.stdout).to.contain(`keyring ${header.keyring}`);
    expect(header.kinds.M).to.equal(20); // twenty keys' indexes
    const end = bytes.lastIndexOf(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    const records = bytes.subarray(newline + 1, end);
    expect(createHash('sha256').update(records).digest('hex')).to.equal(header.sha256);

    const restoreInto = (snapshot: string, ...flags: string[]) =>
      runCoffer(
        ['operator', 'restore', '--from', snapshot, ...flags],
        lmdbEnv(join(tempDir(), 'data'), a.config.master_key_file),
      );
    // A header whose counts were changed, and a header never completed (a snapshot cut off).
    const edited = join(dir, 'edited.snapshot');
    const headerText = bytes.subarray(0, newline).toString();
    const changed = headerText.replace(
      `"records":${header.records}`,
      `"records":${header.records + 1}`,
    );
    writeFileSync(edited, Buffer.concat([Buffer.from(changed), bytes.subarray(newline)]));
    const placeholder = join(dir, 'placeholder.snapshot');
    const unfinished = JSON.stringify({
      format: 'coffer-snapshot',
      version: 3,
      created_at: header.created_at,
    });
    writeFileSync(
      placeholder,
      Buffer.concat([Buffer.from(`${unfinished.padEnd(4095, ' ')}\n`), records.subarray(0, 100)]),
    );
    for (const [bad, reason] of [
      [edited, /header does not match its end/],
      [placeholder, /cut short: its header was never completed/],
    ] as const) {
      const run = await restoreInto(bad);
      expect(run.code, bad).to.equal(1);
      expect(run.stderr, bad).to.match(reason);
    }

    // Version 1: a short header, the summary only at the end, the checksum over header and records.
    const v1Header = Buffer.from(
      `${JSON.stringify({ format: 'coffer-snapshot', version: 1, created_at: header.created_at })}\n`,
    );
    const v1 = join(dir, 'v1.snapshot');
    const sha256 = createHash('sha256').update(v1Header).update(records).digest('hex');
    const { records: count, kinds, keyring } = header;
    writeFileSync(
      v1,
      Buffer.concat([
        v1Header,
        records,
        Buffer.from([0xff, 0xff, 0xff, 0xff]),
        Buffer.from(`${JSON.stringify({ records: count, kinds, keyring, sha256 })}\n`),
      ]),
    );
    // Not authenticated: refused, unless the operator takes it as it is.
    const unchecked = await restoreInto(v1);
    expect(unchecked.code).to.equal(1);
    expect(unchecked.stderr).to.match(/version 1, made before snapshots were authenticated/);
    // But this one holds today's keyring (it has an epoch, which no release writing version 1 or 2
    // stored): it was made to skip the MAC, and is refused even when unchecked files are accepted.
    const forged = await restoreInto(v1, '--accept-unauthenticated');
    expect(forged.code).to.equal(1);
    expect(forged.stderr).to.match(
      /the keyring it holds was stored by a release that authenticates its snapshots \(version 3\): the file was made to pass unchecked/,
    );
    // A genuine old file: its keyring as those releases stored it, without an epoch.
    const provider = new LocalKeyProvider(loadOrCreateMasterKey(a.config.master_key_file).key);
    const oldRecords = withoutEpoch(records, provider);
    const old = join(dir, 'old.snapshot');
    const oldSha = createHash('sha256')
      .update(v1Header)
      .update(await oldRecords)
      .digest('hex');
    writeFileSync(
      old,
      Buffer.concat([
        v1Header,
        await oldRecords,
        Buffer.from([0xff, 0xff, 0xff, 0xff]),
        Buffer.from(
          `${JSON.stringify({ records: count, kinds, keyring: await keyringSha(await oldRecords), sha256: oldSha })}\n`,
        ),
      ]),
    );
    const restored = await restoreInto(old, '--accept-unauthenticated');
    expect(restored.code, restored.stderr).to.equal(0);
    expect(restored.stdout).to.contain(`restored ${count} records`);
    expect(restored.stdout).to.contain('not authenticated');
  });

  it('removes the file of a snapshot that could not finish (the database went away while it was taken)', async () => {
    const schema = testSchema();
    // A store with its keyring (a snapshot is authenticated under it), made by a server that then stops.
    const made = await startTestCoffer({
      dataDir: tempDir(),
      env: { COFFER_STORAGE: 'postgres', COFFER_PG_URL: PG_TEST_URL, COFFER_PG_SCHEMA: schema },
    });
    await made.close();
    const store = await openPostgresStore(schema);
    try {
      // Enough records that the snapshot is still being written when the connection is cut.
      for (let batch = 0; batch < 20; batch++)
        await store.atomic([], () => ({
          writes: Array.from({ length: 5000 }, (_, i) => ({
            op: 'put' as const,
            key: Buffer.from(`X${batch}-${i}`),
            value: Buffer.alloc(400, 0x61),
          })),
          result: undefined,
        }));
    } finally {
      await store.close();
    }
    const relay = new Relay(new URL(PG_TEST_URL));
    await relay.start();
    const file = join(tempDir(), 'cut.snapshot');
    try {
      const taking = runCoffer(['operator', 'snapshot', '--out', file], {
        ...pgEnv(schema, made.config.master_key_file),
        COFFER_PG_URL: relay.url(),
      });
      // Cut once the file holds records (past its header and a first chunk).
      await eventually(() => existsSync(file) && statSync(file).size > 4096, {
        interval: 5,
        what: 'records in the snapshot file',
      });
      await relay.cut();
      const taken = await taking;
      expect(taken.code, taken.stdout).to.not.equal(0);
      expect(existsSync(file)).to.equal(false);
    } finally {
      await relay.cut();
    }
  });

  it('refuses a damaged or cut-short snapshot and a store that is not empty, writing nothing', async () => {
    const a = await source();
    await a.put('k/v', 'value');
    const dir = tempDir();
    const file = join(dir, 'a.snapshot');
    expect((await runCoffer(['operator', 'snapshot', '--out', file], lmdbEnv(a))).code).to.equal(0);
    const bytes = readFileSync(file);

    const damaged = join(dir, 'damaged.snapshot');
    const changed = Buffer.from(bytes);
    // A byte of the records (past the 4,096-byte header) changed.
    changed[4096 + Math.floor((changed.length - 4096) / 2)]! ^= 0x01;
    writeFileSync(damaged, changed);
    const cut = join(dir, 'cut.snapshot');
    writeFileSync(cut, bytes.subarray(0, bytes.length - 80));
    for (const [bad, reason] of [
      [damaged, /checksum does not match|counts do not match|end record/],
      [cut, /cut short|end record/],
    ] as const) {
      const target = join(tempDir(), 'data');
      const key = a.config.master_key_file;
      const run = await runCoffer(['operator', 'restore', '--from', bad], lmdbEnv(target, key));
      expect(run.code, bad).to.equal(1);
      expect(run.stderr, bad).to.match(reason);
      // Nothing was written: the same target takes the good snapshot afterwards.
      expect(
        (await runCoffer(['operator', 'restore', '--from', file], lmdbEnv(target, key))).code,
      ).to.equal(0);
    }
    const notEmpty = await runCoffer(['operator', 'restore', '--from', file], lmdbEnv(a));
    expect(notEmpty.code).to.equal(1);
    expect(notEmpty.stderr).to.match(/not empty/);
  });

  it('refuses a snapshot edited by someone who recomputed its checksums, writing nothing: its MAC needs the keyring', async () => {
    const a = await source();
    await a.put('k/v', 'value', 'config');
    const dir = tempDir();
    const file = join(dir, 'a.snapshot');
    expect((await runCoffer(['operator', 'snapshot', '--out', file], lmdbEnv(a))).code).to.equal(0);
    const bytes = readFileSync(file);
    const newline = bytes.indexOf(0x0a);
    const end = bytes.lastIndexOf(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    const header = JSON.parse(bytes.subarray(0, newline).toString());
    const summary = JSON.parse(bytes.subarray(end + 4).toString());
    // A byte of the config value changed, then the checksum recomputed in the header and the end.
    const records = Buffer.from(bytes.subarray(newline + 1, end));
    const at = records.indexOf(Buffer.from('value'));
    expect(at).to.be.above(0);
    records[at]! ^= 0x20; // 'value' -> 'Value'
    const sha256 = createHash('sha256').update(records).digest('hex');
    const edited = join(dir, 'edited.snapshot');
    writeFileSync(
      edited,
      Buffer.concat([
        Buffer.from(`${JSON.stringify({ ...header, sha256 }).padEnd(4095, ' ')}\n`),
        records,
        Buffer.from([0xff, 0xff, 0xff, 0xff]),
        Buffer.from(`${JSON.stringify({ ...summary, sha256 })}\n`),
      ]),
    );
    const target = join(tempDir(), 'data');
    const run = await runCoffer(
      ['operator', 'restore', '--from', edited],
      lmdbEnv(target, a.config.master_key_file),
    );
    expect(run.code).to.equal(1);
    expect(run.stderr).to.match(/does not authenticate: it was changed after it was taken/);
    // Nothing was written: the target is still empty, and takes the true snapshot.
    const good = await runCoffer(
      ['operator', 'restore', '--from', file],
      lmdbEnv(target, a.config.master_key_file),
    );
    expect(good.code, good.stderr).to.equal(0);
    expect(good.stdout).to.match(/authenticated/);
    // A snapshot's MAC needs the keyring: without the master key none is taken.
    const keyless = await runCoffer(['operator', 'snapshot', '--out', join(dir, 'x.snapshot')], {
      ...lmdbEnv(a),
      COFFER_MASTER_KEY_FILE: join(tempDir(), 'absent.key'),
    });
    expect(keyless.code).to.equal(2);
  });
});
