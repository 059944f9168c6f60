import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import type { StorageBackend } from '../../src/storage/backend.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { KEYRING_KEY } from '../../src/store/keyring-store.js';
import {
  AUDIT_COUNT_KEY,
  auditChainKey,
  GENERATION_KEY,
  metaKey,
  tokenKey,
  versionKey,
} from '../../src/store/layout.js';
import { auditFiles, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { dropTestSchemas, PG_TEST_URL, requirePostgres, testSchema } from '../support/postgres.js';
import { runCoffer } from '../support/process.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';

const idOf = (token: string): string => token.slice(4, 20);

/** The current bytes of `keys`, to put back later. */
async function copiesOf(
  storage: StorageBackend,
  keys: readonly Uint8Array[],
): Promise<[Uint8Array, Uint8Array][]> {
  return Promise.all(
    keys.map(async (k) => [k, Buffer.from((await storage.get(k))!)] as const),
  ).then((pairs) => pairs.map(([k, v]) => [k, v]));
}

/** Puts `copies` back, as someone who can write the storage would. */
function putBack(storage: StorageBackend, copies: [Uint8Array, Uint8Array][]): Promise<void> {
  return storage.atomic([], () => ({
    writes: copies.map(([key, value]) => ({ op: 'put' as const, key, value })),
    result: undefined,
  }));
}

/** The LMDB file of a stopped server, opened directly. */
async function withLmdb<T>(c: TestCoffer, work: (s: LmdbBackend) => Promise<T>): Promise<T> {
  const storage = new LmdbBackend({ path: join(c.config.data_dir, 'lmdb') });
  try {
    return await work(storage);
  } finally {
    await storage.close();
  }
}

describe('older records put back are never served (rollback)', function () {
  this.timeout(60_000);

  describe('on LMDB', () => {
    let dir: string;
    let c: TestCoffer;
    let reader: string;
    let running: boolean;
    beforeEach(async () => {
      dir = tempDir();
      c = await startTestCoffer({ dataDir: dir });
      running = true;
      reader = await c.token({ role: 'reader' });
      expect((await c.put('app/db', 'v1')).status).to.equal(201);
    });
    afterEach(async () => {
      if (running) await c.close();
    });
    const restart = () => startTestCoffer({ dataDir: dir, rootToken: c.rootToken });
    const stop = async () => {
      running = false;
      await c.app.close();
    };

    it('refuses to start on a keyring, generation and revoked token put back while it was stopped (the host remembers the newest generation)', async () => {
      const before = await copiesOf(c.storage, [
        KEYRING_KEY,
        GENERATION_KEY,
        tokenKey(idOf(reader)),
      ]);
      expect((await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`)).status).to.equal(204);
      await stop();
      await withLmdb(c, (s) => putBack(s, before));
      const refused = await restart().then(
        (started) => started.close().then(() => null),
        (err: Error) => err,
      );
      expect(refused?.message).to.match(
        /the stored keyring-generation record at Skeyring-generation is older than one already seen \(generation \d+ < \d+\): an older copy was put back/,
      );
    });

    it('refuses to start on a store whose audit chain count was put back (the newest run deleted), in one line; --accept-rollback starts, audited, and verify still reports the gap', async () => {
      const [count] = await copiesOf(c.storage, [AUDIT_COUNT_KEY]);
      await stop();
      const auditDir = c.config.audit.dir!;
      const before = new Set(auditFiles(auditDir));
      // A run the attacker will hide: its chains' records and files deleted, the count put back.
      const later = await restart();
      await later.app.close();
      const hidden = auditFiles(auditDir).filter((f) => !before.has(f));
      const chains = new Set(hidden.map((f) => /audit-(.+)-\d+\.jsonl$/.exec(f)![1]!));
      expect(hidden.length).to.be.greaterThan(0);
      for (const f of hidden) rmSync(f);
      await withLmdb(c, async (s) => {
        await putBack(s, [count!]);
        await s.atomic([], () => ({
          writes: [...chains].map((chain) => ({
            op: 'delete' as const,
            key: auditChainKey(chain),
          })),
          result: undefined,
        }));
      });
      const refused = await restart().then(
        (started) => started.close().then(() => null),
        (err: Error) => err,
      );
      expect(refused?.message).to.match(
        /^the store records \d+ audit chains, fewer than the \d+ this host has seen: .* coffer serve --accept-rollback/,
      );
      expect(refused?.message).not.to.include('\n');
      // Refused again: a start never counts on from the older number by itself.
      expect(
        await restart().then(
          () => 'started',
          () => 'refused',
        ),
      ).to.equal('refused');

      const accepted = await startTestCoffer({
        dataDir: dir,
        rootToken: c.rootToken,
        start: { acceptRollback: true },
      });
      const events = auditLines(accepted.config.audit.dir!).filter(
        (l) => l.event === 'audit.rollback_accepted',
      );
      expect(events).to.have.length(1);
      expect(events[0]).to.include({ by: 'start-up' });
      expect((events[0]!.store_count as number) < (events[0]!.host_seen as number)).to.equal(true);
      const verified = await accepted.verifyLog();
      expect(verified.intact).to.equal(false);
      await accepted.close();
      // Once accepted, an ordinary start goes on (the host has seen this count now).
      running = true;
      c = await restart();
    });

    it("verify finds older records put back with the host's high-water marks deleted: a revoked token active again, a written version gone (NOT AS LOGGED)", async () => {
      const before = await copiesOf(c.storage, [
        KEYRING_KEY,
        GENERATION_KEY,
        tokenKey(idOf(reader)),
        metaKey('app', 'db'),
      ]);
      expect((await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`)).status).to.equal(204);
      const put = await c.put('app/db', 'v2');
      expect(put.status).to.equal(200);
      await stop();
      const env = {
        COFFER_DATA_DIR: c.config.data_dir,
        COFFER_MASTER_KEY_FILE: c.config.master_key_file,
      };
      const clean = await runCoffer(['audit', 'verify'], env);
      expect(clean.code, clean.stdout).to.equal(0);
      // The attacker's revival: the keyring, generation, the token's record and the key's index from
      // before, the newer version deleted, and this host's memory of what it saw removed.
      await withLmdb(c, async (s) => {
        await putBack(s, before);
        await s.atomic([], () => ({
          writes: [{ op: 'delete' as const, key: versionKey('app', 'db', 2) }],
          result: undefined,
        }));
      });
      rmSync(join(c.config.data_dir, 'high-water'), { recursive: true, force: true });
      const verify = await runCoffer(['audit', 'verify'], env);
      expect(verify.code, verify.stdout).to.equal(1);
      expect(verify.stdout).to.include(
        `NOT AS LOGGED: 1 token(s) the log revoked (token.revoke) are active in the store`,
      );
      expect(verify.stdout).to.include(`  ${idOf(reader)}`);
      expect(verify.stdout).to.match(
        new RegExp(
          `NOT AS LOGGED: 1 version\\(s\\) the log says were written are not in the store[^\\n]*\\n  app/db v2 \\(request ${put.headers.get('x-request-id')}\\)`,
        ),
      );
    });

    it("verify finds a keyring rotation undone (keyring and generation put back, high-water deleted): the log's checkpoints recorded the newer generation", async () => {
      const before = await copiesOf(c.storage, [KEYRING_KEY, GENERATION_KEY]);
      expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
      await stop();
      const env = {
        COFFER_DATA_DIR: c.config.data_dir,
        COFFER_MASTER_KEY_FILE: c.config.master_key_file,
      };
      expect((await runCoffer(['audit', 'verify'], env)).code).to.equal(0);
      await withLmdb(c, (s) => putBack(s, before));
      rmSync(join(c.config.data_dir, 'high-water'), { recursive: true, force: true });
      const verify = await runCoffer(['audit', 'verify'], env);
      expect(verify.code, verify.stdout).to.equal(1);
      expect(verify.stdout).to.match(
        /NOT AS LOGGED: the store's keyring is at generation \d+, below the \d+ the log's checkpoints recorded: an older keyring was put back/,
      );
    });

    it('refuses to start on a keyring put back beside the current generation: the keyring is older than its generation', async () => {
      const [keyring] = await copiesOf(c.storage, [KEYRING_KEY]);
      expect((await c.call('POST', '/v1/sys/keyring/rotate')).status).to.equal(200);
      await stop();
      await withLmdb(c, (s) => putBack(s, [keyring!]));
      const refused = await restart().then(
        (started) => started.close().then(() => null),
        (err: Error) => err,
      );
      expect(refused?.message).to.match(
        /the stored keyring record at Skeyring is older than the generation stored beside it \(epoch \d+ < \d+\)/,
      );
    });

    it('fails closed while running when the keyring and its generation are put back, and recovers when they are whole again', async () => {
      const before = await copiesOf(c.storage, [KEYRING_KEY, GENERATION_KEY]);
      expect((await c.call('DELETE', `/v1/auth/token/${idOf(reader)}`)).status).to.equal(204);
      const after = await copiesOf(c.storage, [KEYRING_KEY, GENERATION_KEY]);
      await putBack(c.storage, before);
      // Within the keyring check's second: every request through the store answers 500, never the older state.
      await eventually(async () => (await c.call('GET', '/v1/kv/app/db')).status === 500);
      for (const [token, path] of [
        [reader, '/v1/auth/me'],
        [c.rootToken, '/v1/kv/app/db'],
        [c.rootToken, '/v1/sys/keyring'],
      ] as const) {
        const res = await c.call('GET', path, { token });
        expect(res.status, path).to.equal(500);
        expect(res.body.code).to.equal('integrity_error');
      }
      expect((await c.put('app/db', 'v2')).status).to.equal(500);
      const reported = auditLines(c.config.audit.dir!).filter(
        (l) => l.event === 'store.integrity_error',
      );
      // Reported once (audited and logged), not once per refused request.
      expect(reported.filter((l) => l.key === 'Skeyring-generation')).to.have.length(1);
      await putBack(c.storage, after);
      await eventually(async () => (await c.call('GET', '/v1/kv/app/db')).status === 200);
      expect((await c.call('GET', '/v1/auth/me', { token: reader })).status).to.equal(401);
    });

    it('answers 500, never the older version, when an older copy of a key index is put back; also after the next write is refused', async () => {
      const [index] = await copiesOf(c.storage, [metaKey('app', 'db')]);
      expect((await c.put('app/db', 'v2')).status).to.equal(200);
      await stop();
      await withLmdb(c, (s) => putBack(s, [index!]));
      c = await restart();
      running = true;
      for (let i = 0; i < 2; i++) {
        const read = await c.call('GET', '/v1/kv/app/db');
        expect(read.status).to.equal(500);
        expect(read.body.code).to.equal('integrity_error');
        expect(read.text).to.not.include('v1');
        expect((await c.call('GET', '/v1/kv/app/db?version=1')).status).to.equal(500);
        expect((await c.put('app/db', 'v3')).status).to.equal(500);
      }
      const reported = auditLines(c.config.audit.dir!).filter(
        (l) => l.event === 'store.integrity_error',
      );
      expect(reported.map((l) => l.key)).to.include('Mapp\\x00db');
    });
  });

  describe('on PostgreSQL, two servers running', () => {
    before(async function () {
      await requirePostgres(this);
    });
    after(async () => {
      await dropTestSchemas();
    });

    /** Puts rows back as a database administrator would: plain SQL on the records table. */
    async function sqlPutBack(schema: string, rows: [Uint8Array, Uint8Array][]): Promise<void> {
      const client = new pg.Client({ connectionString: PG_TEST_URL });
      await client.connect();
      try {
        for (const [k, v] of rows)
          await client.query(`UPDATE "${schema}".records SET v = $2 WHERE k = $1`, [
            Buffer.from(k),
            Buffer.from(v),
          ]);
      } finally {
        await client.end();
      }
    }

    it('never lets a revocation or a rotation be undone by older keyring, generation and token rows put back', async () => {
      const schema = testSchema();
      const a = await startTestCoffer({ env: pgEnv(schema) });
      const b = await secondServer(a, schema);
      try {
        const reader = await a.token({ role: 'reader' });
        expect((await b.call('GET', '/v1/auth/me', { token: reader })).status).to.equal(200);
        const before = await copiesOf(a.storage, [
          KEYRING_KEY,
          GENERATION_KEY,
          tokenKey(idOf(reader)),
        ]);
        expect((await a.call('DELETE', `/v1/auth/token/${idOf(reader)}`)).status).to.equal(204);
        expect((await a.call('POST', '/v1/sys/keyring/rotate')).body.active_version).to.equal(2);
        await eventually(
          async () => (await b.call('GET', '/v1/sys/keyring')).body.active_version === 2,
        );
        const after = await copiesOf(a.storage, [
          KEYRING_KEY,
          GENERATION_KEY,
          tokenKey(idOf(reader)),
        ]);

        await sqlPutBack(schema, before);
        // Both servers refuse to go back: everything through the store answers 500 within 1.5 s.
        for (const server of [a, b])
          await eventually(
            async () => (await server.call('GET', '/v1/sys/keyring')).status === 500,
            {
              timeout: 1500,
            },
          );
        for (const server of [a, b]) {
          expect((await server.call('GET', '/v1/auth/me', { token: reader })).status).to.not.equal(
            200,
          );
          expect((await server.call('GET', '/v1/auth/tokens')).status).to.equal(500);
        }
        // A server started now on A's host refuses the store too: it is older than the host has seen.
        const third = await startTestCoffer({
          dataDir: a.dataDir,
          rootToken: a.rootToken,
          env: pgEnv(schema),
          ownsDir: false,
        }).then(
          (s) => s.close().then(() => null),
          (err: Error) => err,
        );
        expect(third?.message).to.match(/older than/);

        await sqlPutBack(schema, after);
        for (const server of [a, b]) {
          await eventually(
            async () => (await server.call('GET', '/v1/sys/keyring')).status === 200,
          );
          expect((await server.call('GET', '/v1/sys/keyring')).body.active_version).to.equal(2);
          expect((await server.call('GET', '/v1/auth/me', { token: reader })).status).to.equal(401);
        }
      } finally {
        await b.close();
        await a.close();
      }
    });
  });
});
