import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { buildCommit, hasCommit, REPO } from '../../bench/git-build.js';
import { generateToken } from '../../src/auth/token-format.js';
import { sodiumReady } from '../../src/crypto/aead.js';
import { LocalKeyProvider, loadOrCreateMasterKey } from '../../src/keys/local-provider.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { unpackPlain } from '../../src/store/format-1.js';
import { KeyringHolder } from '../../src/store/keyring-store.js';
import { intentJournalKey, tokenKey } from '../../src/store/layout.js';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { runCoffer } from '../support/process.js';

/**
 * The last release before the storage barrier (store format 1: plain token and root token records). Its
 * store is made at test time by that release's own code, taken from the git history, rather than committed
 * as a fixture: a committed store would need its master key and tokens in git, which the project never holds.
 */
const FORMAT_1_RELEASE = 'd91f4985868acd894e2bfc808fb3a40af50087b1';

/** What the old release's script made: the tokens, as handed out at creation. */
interface Made {
  readonly reader: string;
  readonly writer: string;
  readonly revoked: string;
}

/** Runs the old release on `dir` (the harness's layout): tokens, values, a revocation, then a clean stop. */
function makeFormat1Store(release: string, dir: string, rootToken: string): Made {
  const script = join(release, 'make-store.mjs'); // beside the release's node_modules
  writeFileSync(
    script,
    `
    import pino from 'pino';
    import { startCoffer } from ${JSON.stringify(join(release, 'dist/src/app.js'))};
    import { loadConfig } from ${JSON.stringify(join(release, 'dist/src/config/load.js'))};
    const config = loadConfig({
      COFFER_PORT: '0', COFFER_DATA_DIR: ${JSON.stringify(join(dir, 'data'))},
      COFFER_MASTER_KEY_FILE: ${JSON.stringify(join(dir, 'keys', 'master.key'))}, COFFER_ROOT_TOKEN: process.env.ROOT, COFFER_LOG_LEVEL: 'silent',
    });
    const app = await startCoffer(config, { log: pino({ level: 'silent' }) });
    const call = async (method, path, body) => {
      const res = await fetch(app.url + path, { method, headers: { authorization: 'Bearer ' + process.env.ROOT, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
      if (res.status >= 300) throw new Error(method + ' ' + path + ': ' + res.status);
      return res.status === 204 ? null : res.json();
    };
    await call('PUT', '/v1/kv/app/prod/db_password', { value: 'p4ss-from-format-1', type: 'secret' });
    await call('PUT', '/v1/kv/app/prod/log_level', { value: 'debug', type: 'config' });
    const reader = await call('POST', '/v1/auth/token', { role: 'reader', metadata: { name: 'format-1-reader' } });
    const writer = await call('POST', '/v1/auth/token', { role: 'writer' });
    const revoked = await call('POST', '/v1/auth/token', { role: 'admin' });
    await call('DELETE', '/v1/auth/token/' + revoked.id);
    await app.close();
    process.stdout.write(JSON.stringify({ reader: reader.token, writer: writer.token, revoked: revoked.token }));
  `,
  );
  return JSON.parse(
    execFileSync(process.execPath, [script], {
      env: { ...process.env, ROOT: rootToken },
    }).toString(),
  ) as Made;
}

/** The stored bytes of the reader token's record, read with the server stopped. */
async function readerRecord(dir: string, made: Made): Promise<Buffer> {
  const storage = new LmdbBackend({ path: join(dir, 'data', 'lmdb') });
  try {
    return Buffer.from((await storage.get(tokenKey(made.reader.slice(4, 20))))!);
  } finally {
    await storage.close();
  }
}

describe('upgrading a store made by the release before the storage barrier (format 1)', function () {
  this.timeout(120_000);

  let work: string;
  let dir: string;
  let rootToken: string;
  let made: Made;
  /** The running server, if any (undefined while it is stopped, so that `after` never closes it twice). */
  let c: TestCoffer | undefined;

  before(function () {
    if (!hasCommit(FORMAT_1_RELEASE)) {
      const reason = `the git history with ${FORMAT_1_RELEASE.slice(0, 7)} is not in ${REPO}`;
      if (process.env.COFFER_TEST_REQUIRE_SYSTEM_PACKAGES === '1')
        throw new Error(`${reason}; CI runs on a clone, which has it`);
      if (this.test?.parent) this.test.parent.title += ` [pending: ${reason}]`;
      this.skip();
    }
    work = tempDir();
    dir = join(work, 'store');
    mkdirSync(dir);
    buildCommit(FORMAT_1_RELEASE, join(work, 'release'));
    rootToken = generateToken().value;
    made = makeFormat1Store(join(work, 'release'), dir, rootToken);
  });

  after(async () => {
    await c?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds plain token records before the upgrade (the attack surface the barrier closes); offline audit commands ask for the upgrade', async () => {
    expect((await readerRecord(dir, made)).includes('format-1-reader')).to.equal(true);
    const run = await runCoffer(['audit', 'verify'], {
      COFFER_DATA_DIR: join(dir, 'data'),
      COFFER_MASTER_KEY_FILE: join(dir, 'keys', 'master.key'),
    });
    expect(run.code).to.equal(2);
    expect(run.stderr).to.include(
      'was written by an earlier release (store format 1): start the server once (coffer serve) to upgrade it, then run this again',
    );
  });

  it('opens, is upgraded in place, and every value, token and audit checkpoint in it still works', async () => {
    // An intent copy as that release left one when killed between a commit and the line's write: the plain line.
    const line = JSON.stringify({
      seq: 5,
      chain: 'old-1-chain',
      ts: new Date().toISOString(),
      prev: '0'.repeat(64),
      kind: 'intent',
      request_id: 'from-format-1',
      action: 'write',
      namespace: 'app/prod',
      key: 'db_password',
    });
    const storage = new LmdbBackend({ path: join(dir, 'data', 'lmdb') });
    try {
      await storage.atomic([], () => ({
        writes: [{ op: 'put', key: intentJournalKey('old-1-chain', 5), value: Buffer.from(line) }],
        result: undefined,
      }));
    } finally {
      await storage.close();
    }
    c = await startTestCoffer({ dataDir: dir, rootToken });
    const lines = auditLines(c.config.audit.dir!);
    const upgrades = lines.filter((l) => l.event === 'store.upgrade');
    expect(upgrades).to.have.length(1);
    // Three tokens, the root token, the audit chain the old release started, the two keys' index records
    // and counters, and the intent copy (the keyring generation is written MACed before the upgrade, as
    // the keyring is stored again with its epoch)…
    expect(upgrades[0]).to.include({ format: 2, sealed: 10, unreadable: 0 });
    // …the intent copy, MACed by the upgrade, then put back into the log with its entry.
    expect(
      lines.filter((l) => l.event === 'audit.intent_recovered').map((l) => l.intent),
    ).to.deep.equal([JSON.parse(line)]);

    expect(
      (await c.call('GET', '/v1/kv/app/prod/db_password', { token: made.reader })).body.value,
    ).to.equal('p4ss-from-format-1');
    expect(
      (await c.call('GET', '/v1/kv/app/prod/log_level', { token: made.reader })).body.value,
    ).to.equal('debug');
    const me = await c.call('GET', '/v1/auth/me', { token: made.reader });
    expect(me.body).to.include({ role: 'reader' });
    expect(me.body.metadata).to.deep.equal({ name: 'format-1-reader' });
    expect((await c.put('app/prod/new', 'after-upgrade', 'secret', made.writer)).status).to.equal(
      201,
    );
    expect((await c.put('app/prod/new', 'no', 'secret', made.reader)).status).to.equal(403);
    expect((await c.call('GET', '/v1/auth/me', { token: made.revoked })).status).to.equal(401);
    expect((await c.call('GET', '/v1/auth/tokens')).body.tokens).to.have.length(2);
    expect((await c.call('GET', '/v1/auth/tokens?all=true')).body.tokens).to.have.length(3);
    const verify = await c.call('GET', '/v1/sys/audit/verify');
    expect(verify.status).to.equal(200);
    expect(verify.body.intact).to.equal(true);
  });

  it('finishes an upgrade that was cut off: records already sealed are kept, the rest are sealed', async () => {
    const half = join(work, 'half');
    mkdirSync(half);
    const other = makeFormat1Store(join(work, 'release'), half, rootToken);
    // Seal one token record the way the upgrade does, and stop there, as a kill -9 would.
    const storage = new LmdbBackend({ path: join(half, 'data', 'lmdb') });
    try {
      await sodiumReady();
      const { holder } = await KeyringHolder.open(
        storage,
        new LocalKeyProvider(loadOrCreateMasterKey(join(half, 'keys', 'master.key')).key),
        Date.now(),
      );
      expect(holder.current().storeFormat).to.equal(1);
      const key = tokenKey(other.reader.slice(4, 20));
      const sealed = holder.recordSeal.seal('token', key, unpackPlain((await storage.get(key))!));
      await storage.atomic([], () => ({
        writes: [{ op: 'put', key, value: sealed }],
        result: undefined,
      }));
    } finally {
      await storage.close();
    }
    const resumed = await startTestCoffer({ dataDir: half, rootToken });
    try {
      // Two tokens, the root token, one audit chain, two index records and two counters: the reader's
      // record was sealed already (and the keyring generation is MACed as the keyring gets its epoch).
      expect(
        auditLines(resumed.config.audit.dir!).find((l) => l.event === 'store.upgrade'),
      ).to.include({ sealed: 8, unreadable: 0 });
      for (const token of [other.reader, other.writer])
        expect((await resumed.call('GET', '/v1/auth/me', { token })).status).to.equal(200);
      expect((await resumed.call('GET', '/v1/auth/me', { token: other.revoked })).status).to.equal(
        401,
      );
    } finally {
      await resumed.close();
    }
  });

  it('leaves the token records sealed, and does not upgrade again', async () => {
    await c!.app.close();
    c = undefined;
    expect((await readerRecord(dir, made)).includes('format-1-reader')).to.equal(false);
    c = await startTestCoffer({ dataDir: dir, rootToken });
    expect(
      auditLines(c.config.audit.dir!).filter((l) => l.event === 'store.upgrade'),
    ).to.have.length(1);
    expect((await c.call('GET', '/v1/auth/me', { token: made.reader })).status).to.equal(200);
  });
});
