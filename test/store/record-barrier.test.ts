import { rmSync } from 'node:fs';
import { join } from 'node:path';
import argon2 from 'argon2';
import { expect } from 'chai';
import { Packr } from 'msgpackr';
import pino from 'pino';
import { startCoffer } from '../../src/app.js';
import { generateToken } from '../../src/auth/token-format.js';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KEYRING_KEY, type KeyringHolder } from '../../src/store/keyring-store.js';
import {
  AUDIT_CHAINS_RANGE,
  counterKey,
  GENERATION_KEY,
  metaKey,
  REWRAP_STATE_KEY,
  ROOT_TOKEN_KEY,
  tokenKey,
  versionKey,
} from '../../src/store/layout.js';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

/** As an attacker with write access to the storage would: the LMDB file opened directly, the server stopped. */
async function withStorage<T>(
  c: TestCoffer,
  change: (storage: LmdbBackend) => Promise<T>,
): Promise<T> {
  const storage = new LmdbBackend({ path: join(c.config.data_dir, 'lmdb') });
  try {
    return await change(storage);
  } finally {
    await storage.close();
  }
}

const put = (storage: LmdbBackend, key: Uint8Array, value: Uint8Array): Promise<void> =>
  storage.atomic([], () => ({ writes: [{ op: 'put', key, value }], result: undefined }));

const idOf = (token: string): string => token.slice(4, 20);

/** The settings `c` runs with, as environment variables, without a root token. */
const configEnv = (c: TestCoffer): Record<string, string> => ({
  COFFER_PORT: '0',
  COFFER_DATA_DIR: c.config.data_dir,
  COFFER_MASTER_KEY_FILE: c.config.master_key_file,
  COFFER_LOG_LEVEL: 'silent',
});

describe("the storage barrier: the store's records are sealed or MACed, bound to their storage key", function () {
  this.timeout(60_000);

  let dir: string;
  let c: TestCoffer;
  let reader: string;
  let writer: string;

  beforeEach(async () => {
    dir = tempDir();
    c = await startTestCoffer({ dataDir: dir });
    reader = await c.token({ role: 'reader', metadata: { name: 'alice-ci-reader' } });
    writer = await c.token({ role: 'writer' });
    expect((await c.put('app/db', 'hunter2')).status).to.equal(201);
    await c.app.close();
    running = false;
  });

  afterEach(async () => {
    if (running) await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  let running = false;

  /** The server again, on the tampered store. */
  async function restart(): Promise<void> {
    c = await startTestCoffer({ dataDir: dir, rootToken: c.rootToken });
    running = true;
  }

  async function stop(): Promise<void> {
    running = false;
    await c.app.close();
  }

  const status = async (token: string, method = 'GET', path = '/v1/auth/me'): Promise<number> =>
    (await c.call(method, path, { token })).status;

  it('keeps token records unreadable in storage: neither the metadata name nor the role is in the bytes', async () => {
    const bytes = await withStorage(c, async (s) =>
      Buffer.from((await s.get(tokenKey(idOf(reader))))!),
    );
    expect(bytes.includes('alice-ci-reader')).to.equal(false);
    expect(bytes.includes('reader')).to.equal(false);
    await restart();
    expect((await c.call('GET', '/v1/auth/me', { token: reader })).body.metadata).to.deep.equal({
      name: 'alice-ci-reader',
    });
  });

  it('refuses a token whose record has one byte changed, leaves it out of listings, and audits and logs it by kind and key', async () => {
    await withStorage(c, async (s) => {
      const key = tokenKey(idOf(reader));
      const bytes = Buffer.from((await s.get(key))!);
      bytes[bytes.length - 3]! ^= 0x01;
      await put(s, key, bytes);
    });
    await restart();
    expect(await status(reader)).to.equal(401);
    expect(await status(reader, 'GET', '/v1/kv/app/db')).to.equal(401);
    expect(await status(writer)).to.equal(200);
    const listed = (await c.call('GET', '/v1/auth/tokens')).body.tokens.map(
      (t: { id: string }) => t.id,
    );
    expect(listed).to.include(idOf(writer)).and.not.include(idOf(reader));
    const revoke = await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`);
    expect(revoke.status).to.equal(500);
    expect(revoke.body.code).to.equal('integrity_error');
    const events = auditLines(c.config.audit.dir!).filter(
      (l) => l.event === 'store.integrity_error',
    );
    expect(events.length).to.be.at.least(1);
    expect(events[0]).to.include({ kind: 'token', key: `T${idOf(reader)}` });
    expect(JSON.stringify(events)).to.not.include('alice-ci-reader');
  });

  it("refuses both tokens when their records are swapped, and a record copied from another token's key", async () => {
    const third = await (async () => {
      await restart();
      const t = await c.token({ role: 'reader' });
      await stop();
      return t;
    })();
    await withStorage(c, async (s) => {
      const [r, w] = await Promise.all(
        [reader, writer, third].map((v) => s.get(tokenKey(idOf(v)))),
      );
      await put(s, tokenKey(idOf(reader)), w!);
      await put(s, tokenKey(idOf(writer)), r!);
      // The third token's key now holds a copy of the (original) writer record.
      await put(s, tokenKey(idOf(third)), w!);
    });
    await restart();
    expect(await status(reader)).to.equal(401);
    expect(await status(writer)).to.equal(401);
    expect(await status(third)).to.equal(401);
    expect(await status(third, 'PUT', '/v1/kv/app/x')).to.equal(401);
  });

  it('never obeys a token record written into storage by hand: a reader made "admin" keeps no more than its own rights', async () => {
    // The attacker holds the reader token, so can compute a valid hash of its secret, and writes the
    // record the way format-1 stores kept it (plain msgpack), with the role raised.
    const packr = new Packr({ useRecords: false, mapsAsObjects: true });
    const forged = {
      id: idOf(reader),
      hash: await argon2.hash(reader.slice(21), { type: argon2.argon2id }),
      role: 'admin',
      scopes: null,
      metadata: {},
      createdAt: Date.now(),
      expiresAt: Date.now() + 3_600_000,
      revokedAt: null,
    };
    await withStorage(c, (s) => put(s, tokenKey(idOf(reader)), packr.pack(forged)));
    await restart();
    expect(await status(reader, 'POST', '/v1/auth/token')).to.equal(401);
    expect(await status(reader, 'GET', '/v1/auth/tokens')).to.equal(401);
    expect(await status(reader, 'PUT', '/v1/kv/app/db')).to.equal(401);
    // A whole new token planted the same way is no token at all.
    const planted = { ...forged, id: 'Planted000000000' };
    await stop();
    await withStorage(c, (s) => put(s, tokenKey(planted.id), packr.pack(planted)));
    await restart();
    expect(await status(`cfr_${planted.id}_${reader.slice(21)}`)).to.equal(401);
  });

  it('keeps a revoked token revoked when its record from before the revocation is put back (a replay), across a restart', async () => {
    const before = await withStorage(c, async (s) =>
      Buffer.from((await s.get(tokenKey(idOf(reader))))!),
    );
    await restart();
    expect((await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`)).status).to.equal(204);
    await stop();
    await withStorage(c, (s) => put(s, tokenKey(idOf(reader)), before));
    await restart();
    expect(await status(reader)).to.equal(401);
    expect(await status(reader, 'GET', '/v1/kv/app/db')).to.equal(401);
    const shown = (await c.call('GET', `/v1/auth/tokens?all=true`)).body.tokens.find(
      (t: { id: string }) => t.id === idOf(reader),
    );
    expect(shown.status).to.equal('revoked');
    expect(
      (await c.call('GET', '/v1/auth/tokens')).body.tokens.map((t: { id: string }) => t.id),
    ).to.not.include(idOf(reader));
    const events = auditLines(c.config.audit.dir!).filter(
      (l) => l.event === 'store.integrity_error',
    );
    expect(events.map((l) => l.key)).to.include(`T${idOf(reader)}`);
    expect(await status(writer)).to.equal(200);
  });

  it('keeps it revoked in a second process on the same store that used the token before: the replay is refused within a second', async () => {
    await restart();
    const other = await startTestCoffer({ dataDir: dir, rootToken: c.rootToken });
    try {
      const seen = (await other.call('GET', '/v1/auth/me', { token: reader })).status;
      expect(seen).to.equal(200); // the other process has opened (and remembers) the record from before
      const storage = c.storage as LmdbBackend;
      const before = Buffer.from((await storage.get(tokenKey(idOf(reader))))!);
      expect((await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`)).status).to.equal(204);
      await put(storage, tokenKey(idOf(reader)), before);
      const took = await eventually(
        async () => (await other.call('GET', '/v1/auth/me', { token: reader })).status === 401,
        { timeout: 3000, what: 'the replayed record refused' },
      );
      expect(took).to.be.below(1000);
      expect(await status(reader)).to.equal(401);
    } finally {
      await other.app.close();
    }
  });

  it('refuses an older root token record put back after the root token was replaced: the earlier root token never works again', async () => {
    const earlier = c.rootToken;
    const oldRecord = await withStorage(c, async (s) =>
      Buffer.from((await s.get(ROOT_TOKEN_KEY))!),
    );
    // The root token is replaced (COFFER_ROOT_TOKEN set to a new one), as after a suspected leak.
    c = await startTestCoffer({ dataDir: dir, rootToken: generateToken().value });
    running = true;
    expect(await status(earlier)).to.equal(401);
    await stop();
    await withStorage(c, (s) => put(s, ROOT_TOKEN_KEY, oldRecord));

    let error: unknown;
    await startCoffer(loadConfig(configEnv(c)), { log: pino({ level: 'silent' }) }).catch(
      (e: unknown) => (error = e),
    );
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as ConfigError).message).to.match(
      /^COFFER_ROOT_TOKEN: the stored root-token record at Sroot-token is not the record the keyring names \(an older copy put back\?\) and is not used; start once with COFFER_ROOT_TOKEN set/,
    );
    // Configured, the current root token replaces the put-back record; the earlier one stays refused.
    await restart();
    expect(await status(earlier)).to.equal(401);
    expect(await status(c.rootToken, 'GET', '/v1/auth/tokens')).to.equal(200);
    // And a start without COFFER_ROOT_TOKEN now finds the record the keyring names.
    await stop();
    const plain = await startCoffer(loadConfig(configEnv(c)), { log: pino({ level: 'silent' }) });
    await plain.close();
  });

  for (const [damage, change] of [
    [
      'one byte changed',
      (bytes: Buffer): Buffer =>
        Buffer.from(bytes.map((b, i) => (i === bytes.length - 1 ? b ^ 0x01 : b))),
    ],
    ['a token record put in its place', (_: Buffer, token: Buffer): Buffer => token],
  ] as const) {
    it(`refuses to start on a root token record with ${damage} unless COFFER_ROOT_TOKEN replaces it`, async () => {
      await withStorage(c, async (s) => {
        const [root, token] = await Promise.all([
          s.get(ROOT_TOKEN_KEY),
          s.get(tokenKey(idOf(writer))),
        ]);
        await put(s, ROOT_TOKEN_KEY, change(Buffer.from(root!), Buffer.from(token!)));
      });
      let error: unknown;
      await startCoffer(loadConfig(configEnv(c)), { log: pino({ level: 'silent' }) }).catch(
        (e: unknown) => (error = e),
      );
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).message).to.match(
        /^COFFER_ROOT_TOKEN: the stored root-token record at Sroot-token failed its integrity check and is not used; start once with COFFER_ROOT_TOKEN set/,
      );
      // With the token configured, the damaged record is replaced and root works again.
      await restart();
      expect(await status(c.rootToken, 'GET', '/v1/auth/tokens')).to.equal(200);
    });
  }

  describe('the key index and version counters', () => {
    it('answers 500 integrity_error, never a changed answer, for a changed, swapped or hand-written index record', async () => {
      await restart();
      expect((await c.put('app/cfg', 'debug', 'config')).status).to.equal(201);
      const configReader = await c.token({ role: 'config-reader' });
      expect((await c.call('GET', '/v1/kv/app/', { token: configReader })).body.keys).to.deep.equal(
        ['cfg'],
      );
      await stop();
      const [secretMeta, configMeta] = [metaKey('app', 'db'), metaKey('app', 'cfg')];
      const damages: [string, (s: LmdbBackend) => Promise<void>][] = [
        [
          'one byte changed',
          async (s) => {
            const bytes = Buffer.from((await s.get(secretMeta))!);
            bytes[bytes.length - 1]! ^= 0x01;
            await put(s, secretMeta, bytes);
          },
        ],
        [
          "two keys' records swapped",
          async (s) => {
            const [a, b] = await Promise.all([s.get(secretMeta), s.get(configMeta)]);
            await put(s, secretMeta, b!);
            await put(s, configMeta, a!);
          },
        ],
        // The secret key made to look like a config key, so that a config-reader would list it.
        [
          'written by hand',
          (s) =>
            put(
              s,
              secretMeta,
              new Packr({ useRecords: false, mapsAsObjects: true }).pack({
                l: 1,
                t: 'config',
                f: 1,
              }),
            ),
        ],
      ];
      for (const [damage, change] of damages) {
        const saved = await withStorage(c, async (s) => {
          const before = await Promise.all([s.get(secretMeta), s.get(configMeta)]);
          await change(s);
          return before;
        });
        await restart();
        const read = await c.call('GET', '/v1/kv/app/db');
        expect(read.status, damage).to.equal(500);
        expect(read.body.code, damage).to.equal('integrity_error');
        expect(read.text).to.not.include('hunter2');
        const listed = await c.call('GET', '/v1/kv/app/', { token: configReader });
        expect(listed.status, damage).to.equal(500);
        expect(listed.text).to.not.include('"db"');
        await stop();
        await withStorage(c, async (s) => {
          await put(s, secretMeta, saved[0]!);
          await put(s, configMeta, saved[1]!);
        });
      }
      await restart();
      expect((await c.call('GET', '/v1/kv/app/db')).body.value).to.equal('hunter2');
    });

    it('refuses a write to a deleted key whose counter was changed by hand, and a write after an older index record was put back', async () => {
      await restart();
      expect((await c.put('app/db', 'second')).status).to.equal(200);
      const oldIndex = await c.storage.get(metaKey('app', 'db')); // says version 2 is the latest
      expect((await c.put('app/db', 'third')).status).to.equal(200);
      const third = await c.storage.get(versionKey('app', 'db', 3));
      expect((await c.put('app/gone', 'x')).status).to.equal(201);
      expect((await c.call('DELETE', '/v1/kv/app/gone')).status).to.equal(204);
      await stop();
      await withStorage(c, async (s) => {
        await put(s, metaKey('app', 'db'), oldIndex!); // a replay: a valid copy, older than the versions stored
        await put(s, counterKey('app', 'gone'), Buffer.from([0, 0, 0, 0])); // a plain counter set back to 0
      });
      await restart();
      for (const path of ['app/db', 'app/gone']) {
        const write = await c.put(path, 'overwrite?');
        expect(write.status, path).to.equal(500);
        expect(write.body.code, path).to.equal('integrity_error');
      }
      // Version 3, which the replayed index would have had the write overwrite, is stored as written.
      expect(
        Buffer.from((await c.storage.get(versionKey('app', 'db', 3)))!).equals(Buffer.from(third!)),
      ).to.equal(true);
    });
  });

  describe('the audit chain registry', () => {
    const chainKeys = (s: LmdbBackend): Promise<Uint8Array[]> =>
      (async () => {
        const keys: Uint8Array[] = [];
        for await (const entry of s.scan(AUDIT_CHAINS_RANGE)) keys.push(Buffer.from(entry.key));
        return keys;
      })();

    const verify = async (): Promise<{ intact: boolean; reason?: string }> =>
      (await c.call('GET', '/v1/sys/audit/verify')).body;

    it('is sealed: a changed byte, two chains swapped, or a plain record rolling a checkpoint back each make verify fail', async () => {
      await restart(); // a second chain
      await stop();
      const damages: [string, (s: LmdbBackend, keys: Uint8Array[]) => Promise<void>][] = [
        [
          'one byte changed',
          async (s, [first]) => {
            const bytes = Buffer.from((await s.get(first!))!);
            bytes[bytes.length - 2]! ^= 0x01;
            await put(s, first!, bytes);
          },
        ],
        [
          'two records swapped',
          async (s, [first, second]) => {
            const [a, b] = await Promise.all([s.get(first!), s.get(second!)]);
            await put(s, first!, b!);
            await put(s, second!, a!);
          },
        ],
        [
          'a plain record with no checkpoint',
          async (s, [first]) => {
            const chain = Buffer.from(first!).toString('latin1', 1);
            await put(
              s,
              first!,
              Buffer.from(
                JSON.stringify({
                  chain,
                  started_at: new Date().toISOString(),
                  last_checkpoint: null,
                }),
              ),
            );
          },
        ],
      ];
      for (const [damage, change] of damages) {
        const saved = await withStorage(c, async (s) => {
          const keys = await chainKeys(s);
          const values = await Promise.all(keys.map((k) => s.get(k)));
          await change(s, keys);
          return keys.map((k, i) => [k, values[i]!] as const);
        });
        await restart();
        const result = await verify();
        expect(result.intact, damage).to.equal(false);
        expect(result.reason, damage).to.match(
          /^the store's record of chain \S+ failed its integrity check$/,
        );
        await stop();
        // Put the records back as they were (this server's own chain record stays): verify passes again.
        await withStorage(c, async (s) => {
          for (const [k, v] of saved) await put(s, k, v);
        });
        await restart();
        expect((await verify()).intact, `after undoing: ${damage}`).to.equal(true);
        await stop();
      }
    });
  });

  describe('the keyring generation', () => {
    const damages: [string, (s: LmdbBackend) => Promise<void>][] = [
      [
        'one byte changed',
        async (s) => {
          const bytes = Buffer.from((await s.get(GENERATION_KEY))!);
          bytes[bytes.length - 1]! ^= 0x01;
          await put(s, GENERATION_KEY, bytes);
        },
      ],
      // A valid MACed record of the same size, made for another key and kind: a version counter.
      [
        'a record from another key',
        async (s) => put(s, GENERATION_KEY, (await s.get(counterKey('app', 'gone')))!),
      ],
      ['a plain number written by hand', (s) => put(s, GENERATION_KEY, Buffer.from([0, 0, 0, 9]))],
      [
        'been deleted',
        (s) =>
          s.atomic([], () => ({
            writes: [{ op: 'delete', key: GENERATION_KEY }],
            result: undefined,
          })),
      ],
    ];

    for (const [damage, change] of damages) {
      it(`refuses writes while it has ${damage}, and the next start replaces it (audited)`, async () => {
        await restart();
        expect((await c.put('app/gone', 'x')).status).to.equal(201);
        expect((await c.call('DELETE', '/v1/kv/app/gone')).status).to.equal(204);
        const before = (await c.call('GET', '/v1/sys/keyring')).body.generation as number;
        // Changed under the running server, as a database administrator could.
        await change(c.storage as LmdbBackend);
        const write = await c.put('app/db', 'changed?');
        expect(write.status).to.equal(500);
        expect(write.body.code).to.equal('integrity_error');
        expect((await c.call('GET', '/v1/kv/app/db')).body.value).to.equal('hunter2');
        await stop();
        await restart();
        const replaced = auditLines(c.config.audit.dir!).filter(
          (l) => l.event === 'store.integrity_error' && l.replaced === true,
        );
        expect(replaced.map((l) => l.key)).to.deep.equal(['Skeyring-generation']);
        expect((await c.call('GET', '/v1/sys/keyring')).body.generation).to.not.equal(before);
        expect((await c.put('app/db', 'changed')).status).to.equal(200);
      });
    }

    it("is followed only to a keyring with this store's permanent root: another store's keyring under the same master key is refused", async () => {
      // A second store under the same master key file: its keyring opens with that key, but is not ours.
      const other = await startTestCoffer({
        dataDir: tempDir(),
        env: { COFFER_MASTER_KEY_FILE: c.config.master_key_file },
      });
      const foreign = await other.storage.get(KEYRING_KEY);
      const foreignGeneration = await other.storage.get(GENERATION_KEY);
      await other.close();
      await restart();
      const seal = (c.app.keyring as KeyringHolder).recordSeal;
      // Put in place with a valid generation record, so the running server reloads the keyring.
      const generation = seal.authenticate(
        'keyring-generation',
        GENERATION_KEY,
        Buffer.from([0, 0, 0, 77]),
      );
      await (c.storage as LmdbBackend).atomic([], () => ({
        writes: [
          { op: 'put', key: KEYRING_KEY, value: foreign! },
          { op: 'put', key: GENERATION_KEY, value: generation },
        ],
        result: undefined,
      }));
      expect(foreignGeneration).to.not.equal(undefined);
      const write = await c.put('app/db', 'under their keyring?');
      expect(write.status).to.equal(500);
      expect((await c.call('GET', '/v1/kv/app/db')).body.value).to.equal('hunter2');
    });
  });

  describe('the rewrap state', () => {
    const rewrap = (
      method: 'GET' | 'POST',
    ): Promise<{ status: number; body: Record<string, unknown> }> =>
      c.call(method, '/v1/sys/keyring/rewrap', method === 'POST' ? { json: {} } : {});
    /** The progress once the run has finished. */
    const finished = async (): Promise<Record<string, unknown>> => {
      let progress: Record<string, unknown> = {};
      await eventually(
        async () => {
          progress = (await rewrap('GET')).body;
          return progress.running === false && progress.finished_at !== null;
        },
        { timeout: 20_000, interval: 50, what: 'the rewrap finished' },
      );
      return progress;
    };

    it('is MACed: a changed byte, a record from another key, or a cursor moved by hand is never used; a new run starts from the first record', async () => {
      await restart();
      for (let i = 0; i < 5; i++) expect((await c.put(`app/k${i}`, `v${i}`)).status).to.equal(201);
      expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
      expect((await rewrap('POST')).status).to.equal(202);
      await finished();
      const storage = c.storage as LmdbBackend;
      const done = (await storage.get(REWRAP_STATE_KEY))!;
      const plain = new Packr({ useRecords: false, mapsAsObjects: true });
      const damages: [string, () => Promise<void>][] = [
        [
          'one byte changed',
          async () => {
            const bytes = Buffer.from(done);
            bytes[bytes.length - 1]! ^= 0x01;
            await put(storage, REWRAP_STATE_KEY, bytes);
          },
        ],
        [
          'a record from another key',
          async () => put(storage, REWRAP_STATE_KEY, (await storage.get(metaKey('app', 'k0')))!),
        ],
        // An unfinished run whose cursor points past every record: used, it would skip them all.
        [
          'a cursor moved by hand',
          () =>
            put(
              storage,
              REWRAP_STATE_KEY,
              plain.pack({
                target: 2,
                after: versionKey('zzz', 'z', 1),
                total: 6,
                examined: 6,
                rewrapped: 0,
                failed: 0,
                startedAt: 0,
                updatedAt: 0,
                finishedAt: null,
                owner: 'x:1',
              }),
            ),
        ],
      ];
      for (const [damage, change] of damages) {
        await change();
        const progress = await rewrap('GET');
        expect(progress.status, damage).to.equal(500);
        expect(progress.body.code, damage).to.equal('integrity_error');
        const started = await rewrap('POST');
        expect(started.status, damage).to.equal(202);
        expect(started.body.examined, damage).to.equal(0);
        expect((await finished()).rewrapped, damage).to.equal(0); // every record examined again; all on version 2 already
      }
      const events = auditLines(c.config.audit.dir!).filter(
        (l) => l.event === 'store.integrity_error',
      );
      // Each start reports the damaged state it replaces; the progress reads are reported where every
      // refused read is (http/problem.ts), once a minute for the same record and problem: the first one.
      expect(events.map((l) => l.kind)).to.deep.equal([
        'rewrap-state',
        'rewrap-state',
        'rewrap-state',
        'rewrap-state',
      ]);
    });
  });
});
