import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { StorageUnavailableError } from '../../src/storage/backend.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { startTestCoffer } from '../support/harness.js';
import { send } from '../support/http-client.js';
import { runCoffer, serveSettings, startProcess } from '../support/process.js';
import { tempDir } from '../support/temp-dirs.js';

const PROJECT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Another process that opens the store's LMDB environment and holds its write transaction for `ms`: every
 * write transaction the server begins waits for it, as one did on a full disk when lmdb-js failed a batch
 * and left it pending (issue #37, item 9). Resolves once the transaction is held; `released` once it ends.
 */
async function holdWriteLock(lmdbPath: string, ms: number): Promise<{ released: Promise<void> }> {
  const script = `
    const { open } = require('lmdb');
    const { writeSync } = require('node:fs');
    const root = open({ path: ${JSON.stringify(lmdbPath)}, noSubdir: false, maxDbs: 4 });
    root.transactionSync(() => {
      writeSync(1, 'holding\\n');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${ms});
    });
    root.close();
  `;
  const child = spawn(process.execPath, ['-e', script], {
    cwd: PROJECT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const released = new Promise<void>((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`the lock holder exited ${code}`)),
    ),
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('holding')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the lock holder exited ${code}: ${stderr}`)));
  });
  return { released };
}

describe('an LMDB write that lmdb-js does not settle', function () {
  this.timeout(60_000);

  it('is answered 503 storage_unavailable once 3 s have passed, not left unanswered; it is not made later, and the store writes again afterwards', async () => {
    const { root, env } = serveSettings(1);
    const p = await startProcess(env);
    try {
      expect(
        (await send(p.url, 'PUT', '/v1/kv/stall/before', root, { value: 'one', type: 'secret' }))
          .status,
      ).to.equal(201);
      const { released } = await holdWriteLock(join(env.COFFER_DATA_DIR, 'lmdb'), 8_000);
      const started = Date.now();
      const res = await send(p.url, 'PUT', '/v1/kv/stall/during', root, {
        value: 'two',
        type: 'secret',
      });
      const waited = Date.now() - started;
      expect(res.status, JSON.stringify(res.body)).to.equal(503);
      expect(res.body.code).to.equal('storage_unavailable');
      // The plan never ran: the answer says the change was not made.
      expect(res.body.detail).to.equal(
        'the storage cannot be reached; the change was not made: try again',
      );
      expect(res.headers['retry-after']).to.equal('1');
      expect(waited).to.be.within(2_500, 7_500);
      await released;
      // lmdb-js runs the abandoned plan once the lock is free: it writes nothing.
      expect(
        (await send(p.url, 'PUT', '/v1/kv/stall/after', root, { value: 'three', type: 'secret' }))
          .status,
      ).to.equal(201);
      expect((await send(p.url, 'GET', '/v1/kv/stall/during', root)).status).to.equal(404);
      expect((await send(p.url, 'GET', '/v1/kv/stall/before', root)).body.value).to.equal('one');
      expect((await send(p.url, 'GET', '/v1/kv/stall/after', root)).body.value).to.equal('three');
      expect((await send(p.url, 'GET', '/v1/kv/stall', root)).body.keys).to.deep.equal([
        'after',
        'before',
      ]);
    } finally {
      await p.stop();
    }
    // The refused write's intent and its outcome are in the log, and the log holds.
    const verify = await runCoffer(['audit', 'verify'], env);
    expect(verify.code, verify.stdout).to.equal(0);
  });
});

describe("a committed LMDB write whose flush lmdb-js never confirms (injected: its 'flushed' left pending)", function () {
  this.timeout(30_000);
  it('is answered 503 storage_unavailable within about 5 s, saying it may still be made, never left waiting', async () => {
    const backend = new LmdbBackend({ path: join(tempDir(), 'lmdb') });
    const root = (backend as unknown as { root: { flushed: PromiseLike<unknown> } }).root;
    const flushed = root.flushed;
    try {
      const key = Buffer.from('Kflush');
      await backend.atomic([], () => ({
        writes: [{ op: 'put', key, value: Buffer.from('one') }],
        result: undefined,
      }));
      // What CI met on a full disk: the transaction settled, its flush never did.
      root.flushed = new Promise<never>(() => undefined);
      const started = Date.now();
      const failed = await backend
        .atomic([], () => ({
          writes: [{ op: 'put', key, value: Buffer.from('two') }],
          result: undefined,
        }))
        .then(
          () => null,
          (err: unknown) => err,
        );
      const waited = Date.now() - started;
      expect(failed).to.be.instanceOf(StorageUnavailableError);
      expect((failed as Error).message).to.include('may still be made');
      expect(waited).to.be.within(4_500, 8_000);
    } finally {
      // The real flush back first: closing waits on it.
      root.flushed = flushed;
      await backend.close();
    }
  });
});

describe('a write answered 503 storage_unavailable whose version was stored all the same', function () {
  this.timeout(60_000);
  it('is covered by its intent entry: verify holds', async () => {
    const c = await startTestCoffer();
    const root = (c.storage as unknown as { root: { flushed: PromiseLike<unknown> } }).root;
    const flushed = root.flushed;
    try {
      expect((await c.put('unsure/k', 'one')).status).to.equal(201);
      root.flushed = new Promise<never>(() => undefined);
      const unsure = await c.put('unsure/k', 'two');
      root.flushed = flushed;
      expect(unsure.status, unsure.text).to.equal(503);
      expect(unsure.body.code).to.equal('storage_unavailable');
      // Its flush unconfirmed, the answer says so: it may have been made.
      expect(unsure.body.detail).to.include('may have been made all the same');
      // It was made: its version is stored, named by no request entry, covered by its intent.
      expect((await c.call('GET', '/v1/kv/unsure/k')).body.version).to.equal(2);
      const verify = await c.call('GET', '/v1/sys/audit/verify');
      expect(verify.status, verify.text).to.equal(200);
      expect(verify.body.coverage).to.include({ uncovered_count: 0, by_intent: 1 });
    } finally {
      root.flushed = flushed;
      await c.close();
    }
  });
});
