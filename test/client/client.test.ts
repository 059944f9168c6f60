import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Coffer, CofferError } from '../../src/client/index.js';
import { selfSignedCertificate } from '../support/certificates.js';
import { eventually } from '../support/eventually.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<CofferError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(CofferError);
    return err as CofferError;
  }
  expect.fail('expected the call to fail');
}

const FAST = { baseDelayMs: 10, maxDelayMs: 50 };

describe('the TypeScript client (coffer/client)', () => {
  let c: TestCoffer;
  let proxy: FaultProxy | undefined;
  before(async () => {
    c = await startTestCoffer();
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  after(async () => {
    await c.close();
  });

  it('covers the key-value endpoints: put, get, versions, check-and-set, list, values, delete', async () => {
    const coffer = new Coffer({ url: c.url, token: c.rootToken });
    const created = await coffer.put('client/app', 'db_password', 'pw-1');
    expect(created).to.include({
      namespace: 'client/app',
      key: 'db_password',
      version: 1,
      created: true,
    });
    expect(created.type).to.equal('secret');
    const second = await coffer.put('client/app', 'db_password', 'pw-2', { ifVersion: 1 });
    expect(second).to.include({ version: 2, created: false });
    const stale = await rejection(
      coffer.put('client/app', 'db_password', 'pw-x', { ifVersion: 1 }),
    );
    expect(stale).to.include({ status: 412, code: 'precondition_failed', currentVersion: 2 });
    expect(stale.mayHaveApplied).to.equal(false);
    expect(stale.requestId).to.match(/^\S+$/);
    await coffer.put('client/app', 'log_level', 'info', { type: 'config' });

    expect((await coffer.get('client/app', 'db_password')).value).to.equal('pw-2');
    expect((await coffer.get('client/app', 'db_password', { version: 1 })).value).to.equal('pw-1');
    expect(
      (await coffer.versions('client/app', 'db_password')).versions.map((v) => v.version),
    ).to.deep.equal([1, 2]);
    expect(await coffer.list('client/app')).to.deep.equal({
      kind: 'listing',
      namespace: 'client/app',
      keys: ['db_password', 'log_level'],
      namespaces: [],
      next_cursor: null,
    });
    expect((await coffer.list('')).namespaces).to.include('client');
    const values = await coffer.values('client/app');
    expect(values.map((v) => [v.key, v.value])).to.deep.equal([
      ['db_password', 'pw-2'],
      ['log_level', 'info'],
    ]);
    const page = await coffer.valuesPage('client/app', { limit: 1 });
    expect(page.values).to.have.length(1);
    expect(page.next_cursor).to.be.a('string');

    await coffer.delete('client/app', 'log_level', { ifVersion: 1 });
    const gone = await rejection(coffer.get('client/app', 'log_level'));
    expect(gone).to.include({ status: 404, code: 'not_found' });
    expect(gone.message).not.to.include(c.rootToken);
  });

  it('covers tokens, the keyring, the audit log and health, and a revoked token fails with 401', async () => {
    const root = new Coffer({ url: c.url, token: c.rootToken });
    const made = await root.createToken({ role: 'reader', metadata: { name: 'client-test' } });
    expect(made.metadata).to.deep.equal({ name: 'client-test' });
    const reader = new Coffer({ url: c.url, token: made.token });
    const me = await reader.self();
    expect(me).to.include({ id: made.id, is_root: false, role: 'reader' });
    expect((await root.listTokens()).tokens.map((t) => t.id)).to.include(made.id);
    const forbidden = await rejection(reader.put('client/app', 'k', 'v'));
    expect(forbidden).to.include({ status: 403, code: 'forbidden' });

    expect((await root.keyringStatus()).active_version).to.be.a('number');
    const rotated = await root.rotateKeyring();
    expect(rotated.active_version).to.be.greaterThan(rotated.previous_version);
    expect(await root.rewrapStatus()).to.have.property('running');
    expect(
      (await root.searchAudit({ token_name: 'client-test', limit: 10 })).entries.length,
    ).to.be.greaterThan(0);
    expect((await root.verifyAudit()).intact).to.equal(true);
    expect((await root.auditPublicKey()).public_key).to.be.a('string');
    expect((await root.sealReport()).totals).to.be.an('object');
    expect((await root.health()).status).to.be.a('string');
    expect((await root.openApiDocument()).openapi).to.match(/^3\.1/);

    await root.revokeToken(made.id);
    const revoked = await rejection(reader.get('client/app', 'db_password'));
    expect(revoked).to.include({ status: 401, code: 'unauthorized' });
    expect(revoked.message).not.to.include(made.token);
  });

  it('watch yields the entry now and each newer version as it is written; watchValues each change of the namespace', async () => {
    const coffer = new Coffer({ url: c.url, token: c.rootToken });
    await coffer.put('watched/app', 'flag', 'off', { type: 'config' });
    const stop = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const entry of coffer.watch('watched/app', 'flag', { signal: stop.signal })) {
        seen.push(`${entry.version}:${entry.value}`);
        if (seen.length === 3) stop.abort();
      }
    })();
    const valuesSeen: string[][] = [];
    const stopValues = new AbortController();
    const watchingValues = (async () => {
      for await (const values of coffer.watchValues('watched/app', { signal: stopValues.signal })) {
        valuesSeen.push(values.map((v) => `${v.key}=${v.value}`));
        if (valuesSeen.length === 2) stopValues.abort();
      }
    })();
    // Each write once both watchers have what came before it (a watcher asks from what it has: a write
    // it has not yet waited for still reaches it, but one it has not yet read would be skipped).
    await eventually(() => seen.length === 1 && valuesSeen.length === 1, {
      what: 'the first answers',
    });
    await coffer.put('watched/app', 'flag', 'on', { type: 'config' });
    await eventually(() => seen.length === 2 && valuesSeen.length === 2, {
      what: 'the second answers',
    });
    await coffer.put('watched/app', 'flag', 'auto', { type: 'config' });
    await Promise.all([watching, watchingValues]);
    expect(seen).to.deep.equal(['1:off', '2:on', '3:auto']);
    expect(valuesSeen[0]).to.deep.equal(['flag=off']);
    expect(valuesSeen[1]).to.deep.equal(['flag=on']);
  });

  it('keepRenewed keeps a short-lived token alive past its first expiry, until stopped', async function () {
    this.timeout(15_000);
    const root = new Coffer({ url: c.url, token: c.rootToken });
    const made = await root.createToken({ role: 'reader', expires_in: 2 });
    const coffer = new Coffer({ url: c.url, token: made.token });
    const stop = new AbortController();
    const renewals: string[] = [];
    const keeping = coffer.keepRenewed({
      signal: stop.signal,
      onRenewed: (at) => renewals.push(at),
    });
    // Past the token's first expiry, renewed at least once.
    await eventually(() => renewals.length >= 1 && Date.now() > Date.parse(made.expires_at) + 200, {
      what: 'the first expiry passed',
      timeout: 10_000,
    });
    expect((await coffer.self()).id).to.equal(made.id);
    expect(renewals.length).to.be.at.least(1);
    expect(Date.parse(renewals.at(-1)!)).to.be.greaterThan(Date.parse(made.expires_at));
    stop.abort();
    await keeping;
    // Root's token does not expire: nothing to keep alive.
    await root.keepRenewed();
  });

  it('takes the token from COFFER_TOKEN, else from COFFER_TOKEN_FILE, and says so when there is neither', async () => {
    const file = join(tempDir(), 'token');
    writeFileSync(file, `${c.rootToken}\n`, { mode: 0o600 });
    const fromFile = new Coffer({}, { COFFER_ADDR: c.url, COFFER_TOKEN_FILE: file });
    expect((await fromFile.self()).is_root).to.equal(true);
    const fromEnv = new Coffer({}, { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken });
    expect((await fromEnv.self()).is_root).to.equal(true);
    proxy = await startFaultProxy(c.url, () => 'pass');
    const none = await rejection(new Coffer({}, { COFFER_ADDR: proxy.url }).self());
    expect(none).to.include({ status: 0, code: 'no_token' });
    expect(proxy.seen, 'nothing is sent without a token').to.deep.equal([]);
    expect(() => new Coffer({ url: 'ftp://x' })).to.throw(TypeError);
  });

  it('retries a read answered 503 (honouring Retry-After) until the server answers 200', async () => {
    await c.put('retry/app/k', 'v');
    proxy = await startFaultProxy(c.url, (_req, i) =>
      i < 2
        ? { status: 503, headers: { 'retry-after': '1' }, body: { code: 'storage_unavailable' } }
        : 'pass',
    );
    const coffer = new Coffer({ url: proxy.url, token: c.rootToken, retry: FAST });
    const started = performance.now();
    expect((await coffer.get('retry/app', 'k')).value).to.equal('v');
    expect(proxy.seen).to.have.length(3);
    expect(performance.now() - started, 'waited Retry-After twice').to.be.at.least(1900);
  });

  it('gives up after its retries, and does not wait for a Retry-After longer than it allows', async () => {
    proxy = await startFaultProxy(c.url, () => ({
      status: 503,
      body: { code: 'audit_unavailable', detail: 'down' },
    }));
    const coffer = new Coffer({
      url: proxy.url,
      token: c.rootToken,
      retry: { ...FAST, retries: 2 },
    });
    const failed = await rejection(coffer.get('retry/app', 'k'));
    expect(failed).to.include({ status: 503, code: 'audit_unavailable', detail: 'down' });
    expect(proxy.seen).to.have.length(3);
    await proxy.close();

    proxy = await startFaultProxy(c.url, () => ({
      status: 429,
      headers: { 'retry-after': '120' },
      body: { code: 'too_many_requests' },
    }));
    const patient = new Coffer({ url: proxy.url, token: c.rootToken, retry: FAST });
    const started = performance.now();
    expect(await rejection(patient.get('retry/app', 'k'))).to.include({ status: 429 });
    expect(performance.now() - started).to.be.below(1000);
    expect(proxy.seen).to.have.length(1);
  });

  it('retries a read whose connection was reset, and a write answered 429 (refused before it was read)', async () => {
    proxy = await startFaultProxy(c.url, (_req, i) => (i === 0 ? 'reset-before' : 'pass'));
    const coffer = new Coffer({ url: proxy.url, token: c.rootToken, retry: FAST });
    expect((await coffer.get('retry/app', 'k')).value).to.equal('v');
    await proxy.close();

    proxy = await startFaultProxy(c.url, (_req, i) =>
      i === 0
        ? { status: 429, headers: { 'retry-after': '0' }, body: { code: 'too_many_requests' } }
        : 'pass',
    );
    const writer = new Coffer({ url: proxy.url, token: c.rootToken, retry: FAST });
    expect(await writer.put('retry/app', 'w', 'once')).to.include({ version: 1, created: true });
    expect(proxy.seen.map((s) => s.method)).to.deep.equal(['PUT', 'PUT']);
  });

  it('never repeats a PUT whose connection was reset after it was sent: it fails with mayHaveApplied', async () => {
    proxy = await startFaultProxy(c.url, (req) => (req.method === 'PUT' ? 'reset-after' : 'pass'));
    const coffer = new Coffer({ url: proxy.url, token: c.rootToken, retry: FAST });
    const lost = await rejection(coffer.put('retry/app', 'reset', 'value-1'));
    expect(lost).to.include({ status: 0, code: 'connection_lost', mayHaveApplied: true });
    expect(lost.message).not.to.include('value-1');
    expect(proxy.seen.filter((s) => s.method === 'PUT')).to.have.length(1);
    // The server did apply it, once: repeating it would have made a version 2.
    expect((await c.call('GET', '/v1/kv/retry/app/reset/versions')).body.current_version).to.equal(
      1,
    );
  });

  it('takes a token with a line break around it, and refuses one no header can carry before sending anything', async () => {
    const trailing = new Coffer({ url: c.url, token: `${c.rootToken}\n` });
    expect((await trailing.self()).is_root).to.equal(true);
    const broken = new Coffer({ url: c.url, token: `${c.rootToken.slice(0, 10)}\u0001rest` });
    const refused = await rejection(broken.put('token/app', 'k', 'v'));
    expect(refused).to.include({ status: 0, code: 'no_token', mayHaveApplied: false });
    expect(refused.detail).to.include('control');
    expect(refused.detail).to.not.include(c.rootToken.slice(0, 10));
  });

  it('says a failed TLS handshake for what it is: nothing was sent (never "may have been applied"), nothing retried', async () => {
    // Plain HTTP asked for TLS.
    const plain = new Coffer({ url: c.url.replace('http://', 'https://'), token: c.rootToken });
    const wrong = await rejection(plain.put('tls/app', 'k', 'value-tls'));
    expect(wrong).to.include({ status: 0, code: 'unreachable', mayHaveApplied: false });
    expect(wrong.detail).to.include('it does not answer TLS (is the address http://?)');
    // A certificate this machine does not trust: refused before the request, tried once.
    const dir = tempDir();
    const { cert, key } = selfSignedCertificate(dir);
    let handshakes = 0;
    const server = createHttpsServer(
      { cert: readFileSync(cert), key: readFileSync(key) },
      (_q, s) => s.end(),
    );
    server.on('connection', () => handshakes++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const untrusted = new Coffer({
        url: `https://127.0.0.1:${port}`,
        token: c.rootToken,
        retry: FAST,
      });
      const refused = await rejection(untrusted.put('tls/app', 'k', 'value-tls'));
      expect(refused).to.include({ status: 0, code: 'unreachable', mayHaveApplied: false });
      expect(refused.detail).to.match(/its certificate is not trusted here .*NODE_EXTRA_CA_CERTS/);
      expect(refused.message).to.not.include('value-tls');
      await rejection(untrusted.get('tls/app', 'k'));
      expect(handshakes, 'one handshake a call: nothing retried').to.equal(2);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('never repeats a PUT answered 503, which may have been applied', async () => {
    proxy = await startFaultProxy(c.url, () => ({
      status: 503,
      headers: { 'retry-after': '0' },
      body: { code: 'audit_unavailable' },
    }));
    const coffer = new Coffer({ url: proxy.url, token: c.rootToken, retry: FAST });
    const refused = await rejection(coffer.put('retry/app', 'x', 'v'));
    expect(refused).to.include({ status: 503, mayHaveApplied: true });
    expect(proxy.seen).to.have.length(1);
  });

  it('retries a write whose connection was refused (nothing was sent) until the server is up', async () => {
    // A port nobody listens on, until a moment later.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const coffer = new Coffer({
      url: `http://127.0.0.1:${port}`,
      token: c.rootToken,
      retry: { retries: 20, baseDelayMs: 50, maxDelayMs: 100 },
    });
    const write = coffer.put('retry/app', 'late', 'v');
    await new Promise((resolve) => setTimeout(resolve, 300));
    proxy = await startFaultProxy(c.url, () => 'pass', port);
    expect(await write).to.include({ version: 1, created: true });
    expect(proxy.seen.map((s) => s.method)).to.deep.equal(['PUT']);
  });

  it('times out an attempt that gets no answer, and says unreachable for a server that is not there', async () => {
    proxy = await startFaultProxy(c.url, () => 'hang');
    const coffer = new Coffer({
      url: proxy.url,
      token: c.rootToken,
      timeoutMs: 200,
      retry: { retries: 0 },
    });
    expect(await rejection(coffer.get('retry/app', 'k'))).to.include({
      status: 0,
      code: 'timeout',
    });
    await proxy.close();
    const nobody = new Coffer({ url: proxy.url, token: c.rootToken, retry: { retries: 0 } });
    expect(await rejection(nobody.get('retry/app', 'k'))).to.include({
      status: 0,
      code: 'unreachable',
    });
  });

  it('loads nothing of the server: the built client imports only Node and its own files', () => {
    const dir = fileURLToPath(new URL('../../src/client/', import.meta.url));
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
      const text = readFileSync(join(dir, file), 'utf8');
      const imports = [...text.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]!);
      for (const from of imports) expect(from, `${file} imports ${from}`).to.match(/^(node:|\.\/)/);
    }
  });
});
