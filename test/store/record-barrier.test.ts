import { rmSync } from 'node:fs';
import { join } from 'node:path';
import argon2 from 'argon2';
import { expect } from 'chai';
import { Packr } from 'msgpackr';
import pino from 'pino';
import { startCoffer } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { AUDIT_CHAINS_RANGE, counterKey, metaKey, ROOT_TOKEN_KEY, tokenKey } from '../../src/storage/layout.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, tempDir, type TestCoffer } from '../support/harness.js';

/** As an attacker with write access to the storage would: the LMDB file opened directly, the server stopped. */
async function withStorage<T>(c: TestCoffer, change: (storage: LmdbBackend) => Promise<T>): Promise<T> {
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

describe('the storage barrier: the store\'s records are sealed or MACed, bound to their storage key', function () {
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

  const status = async (token: string, method = 'GET', path = '/v1/auth/me'): Promise<number> => (await c.call(method, path, { token })).status;

  it('keeps token records unreadable in storage: neither the metadata name nor the role is in the bytes', async () => {
    const bytes = await withStorage(c, async (s) => Buffer.from((await s.get(tokenKey(idOf(reader))))!));
    expect(bytes.includes('alice-ci-reader')).to.equal(false);
    expect(bytes.includes('reader')).to.equal(false);
    await restart();
    expect((await c.call('GET', '/v1/auth/me', { token: reader })).body.metadata).to.deep.equal({ name: 'alice-ci-reader' });
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
    const listed = (await c.call('GET', '/v1/auth/tokens')).body.tokens.map((t: { id: string }) => t.id);
    expect(listed).to.include(idOf(writer)).and.not.include(idOf(reader));
    const revoke = await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`);
    expect(revoke.status).to.equal(500);
    expect(revoke.body.code).to.equal('integrity_error');
    const events = auditLines(c.config.audit.dir!).filter((l) => l.event === 'store.integrity_error');
    expect(events.length).to.be.at.least(1);
    expect(events[0]).to.include({ kind: 'token', key: `T${idOf(reader)}` });
    expect(JSON.stringify(events)).to.not.include('alice-ci-reader');
  });

  it('refuses both tokens when their records are swapped, and a record copied from another token\'s key', async () => {
    const third = await (async () => {
      await restart();
      const t = await c.token({ role: 'reader' });
      await stop();
      return t;
    })();
    await withStorage(c, async (s) => {
      const [r, w] = await Promise.all([reader, writer, third].map((v) => s.get(tokenKey(idOf(v)))));
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
      id: idOf(reader), hash: await argon2.hash(reader.slice(21), { type: argon2.argon2id }), role: 'admin', scopes: null, metadata: {},
      createdAt: Date.now(), expiresAt: Date.now() + 3_600_000, revokedAt: null,
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

  for (const [damage, change] of [
    ['one byte changed', (bytes: Buffer): Buffer => Buffer.from(bytes.map((b, i) => (i === bytes.length - 1 ? b ^ 0x01 : b)))],
    ['a token record put in its place', (_: Buffer, token: Buffer): Buffer => token],
  ] as const) {
    it(`refuses to start on a root token record with ${damage} unless COFFER_ROOT_TOKEN replaces it`, async () => {
      await withStorage(c, async (s) => {
        const [root, token] = await Promise.all([s.get(ROOT_TOKEN_KEY), s.get(tokenKey(idOf(writer)))]);
        await put(s, ROOT_TOKEN_KEY, change(Buffer.from(root!), Buffer.from(token!)));
      });
      let error: unknown;
      await startCoffer(loadConfig(configEnv(c)), { log: pino({ level: 'silent' }) }).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).message).to.match(/^COFFER_ROOT_TOKEN: the stored root-token record at Sroot-token failed its integrity check and is not used; start once with COFFER_ROOT_TOKEN set/);
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
      expect((await c.call('GET', '/v1/kv/app/', { token: configReader })).body.keys).to.deep.equal(['cfg']);
      await stop();
      const [secretMeta, configMeta] = [metaKey('app', 'db'), metaKey('app', 'cfg')];
      const damages: [string, (s: LmdbBackend) => Promise<void>][] = [
        ['one byte changed', async (s) => {
          const bytes = Buffer.from((await s.get(secretMeta))!);
          bytes[bytes.length - 1]! ^= 0x01;
          await put(s, secretMeta, bytes);
        }],
        ['two keys\' records swapped', async (s) => {
          const [a, b] = await Promise.all([s.get(secretMeta), s.get(configMeta)]);
          await put(s, secretMeta, b!);
          await put(s, configMeta, a!);
        }],
        // The secret key made to look like a config key, so that a config-reader would list it.
        ['written by hand', (s) => put(s, secretMeta, new Packr({ useRecords: false, mapsAsObjects: true }).pack({ l: 1, t: 'config', f: 1 }))],
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

    it('refuses a write whose version counter was set back, and keeps the version it would have overwritten', async () => {
      await withStorage(c, (s) => put(s, counterKey('app', 'db'), Buffer.from([0, 0, 0, 0])));
      await restart();
      const write = await c.put('app/db', 'overwrite?');
      expect(write.status).to.equal(500);
      expect(write.body.code).to.equal('integrity_error');
      // Version 1 was not overwritten: it still reads back as written.
      const read = await c.call('GET', '/v1/kv/app/db?version=1');
      expect(read.status).to.equal(200);
      expect(read.body.value).to.equal('hunter2');
    });
  });

  describe('the audit chain registry', () => {
    const chainKeys = (s: LmdbBackend): Promise<Uint8Array[]> =>
      (async () => {
        const keys: Uint8Array[] = [];
        for await (const entry of s.scan(AUDIT_CHAINS_RANGE)) keys.push(Buffer.from(entry.key));
        return keys;
      })();

    const verify = async (): Promise<{ intact: boolean; reason?: string }> => (await c.call('GET', '/v1/sys/audit/verify')).body;

    it('is sealed: a changed byte, two chains swapped, or a plain record rolling a checkpoint back each make verify fail', async () => {
      await restart(); // a second chain
      await stop();
      const damages: [string, (s: LmdbBackend, keys: Uint8Array[]) => Promise<void>][] = [
        ['one byte changed', async (s, [first]) => {
          const bytes = Buffer.from((await s.get(first!))!);
          bytes[bytes.length - 2]! ^= 0x01;
          await put(s, first!, bytes);
        }],
        ['two records swapped', async (s, [first, second]) => {
          const [a, b] = await Promise.all([s.get(first!), s.get(second!)]);
          await put(s, first!, b!);
          await put(s, second!, a!);
        }],
        ['a plain record with no checkpoint', async (s, [first]) => {
          const chain = Buffer.from(first!).toString('latin1', 1);
          await put(s, first!, Buffer.from(JSON.stringify({ chain, started_at: new Date().toISOString(), last_checkpoint: null })));
        }],
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
        expect(result.reason, damage).to.match(/^the store's record of chain \S+ failed its integrity check$/);
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
});
