import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { expect } from 'chai';
import { pino } from 'pino';
import { type AuditLine, auditFiles, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

/** Sends raw bytes on a new connection; resolves with all the server sends back before it closes. */
function rawExchange(url: string, bytes: string, endAfterMs?: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(bytes);
      if (endAfterMs !== undefined) setTimeout(() => socket.destroy(), endAfterMs);
    });
    let text = '';
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer within 15 s')));
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

const headerOf = (raw: string, name: string): string | undefined =>
  new RegExp(`^${name}: (.*)$`, 'im').exec(raw)?.[1]?.trim();

describe('the audit entry of a request records the answer the client got', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer({
      env: {
        COFFER_REQUEST_TIMEOUT: '1',
        COFFER_MAX_VALUE_BYTES: '64',
        COFFER_AUTH_FAILURE_BURST: '1',
        COFFER_AUTH_FAILURE_RATE: '0.01',
      },
    });
  });
  after(async () => {
    await c.close();
  });

  /** The request entry of request `id`, once it is in the file. */
  async function entryOf(id: string): Promise<AuditLine> {
    let entry: AuditLine | undefined;
    await eventually(
      () => {
        entry = auditLines(c.config.audit.dir!).find(
          (l) => l.kind === 'request' && l.request_id === id,
        );
        return entry !== undefined;
      },
      { what: `an audit entry for request ${id}` },
    );
    return entry!;
  }

  async function expectRecorded(res: { status: number; headers: Headers }): Promise<void> {
    const id = res.headers.get('x-request-id');
    expect(id, 'X-Request-Id').to.be.a('string');
    const outcome = (await entryOf(id!)).outcome as { status: number; code: string | null };
    expect(outcome.status).to.equal(res.status);
  }

  it('400, 413, 415 and 429, each as its entry says', async () => {
    const json = { 'content-type': 'application/json' };
    const bad = await c.call('PUT', '/v1/kv/o/k', { body: '{"value":', headers: json });
    expect(bad.status).to.equal(400);
    const large = await c.put('o/k', 'x'.repeat(65));
    expect(large.status).to.equal(413);
    const media = await c.call('PUT', '/v1/kv/o/k', { body: '{}', headers: {} });
    expect(media.status).to.equal(415);
    const reader = await c.token({ role: 'reader' });
    // Two different wrong secrets (a value refused once is refused again without counting).
    const wrong = (char: string) =>
      `${reader.slice(0, reader.lastIndexOf('_') + 1)}${char.repeat(43)}`;
    expect((await c.call('GET', '/v1/auth/me', { token: wrong('A') })).status).to.equal(401);
    const limited = await c.call('GET', '/v1/auth/me', { token: wrong('B') });
    expect(limited.status).to.equal(429);
    for (const res of [bad, large, media, limited]) await expectRecorded(res);
  });

  it('408 with a problem+json body for a body sent too slowly, and its entry says 408', async () => {
    const head = `PUT /v1/kv/o/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${c.rootToken}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"value":`;
    const raw = await rawExchange(c.url, head);
    expect(raw).to.match(/^HTTP\/1\.1 408 /);
    expect(headerOf(raw, 'content-type')).to.equal('application/problem+json');
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    expect(body).to.include({ status: 408, code: 'request_timeout' });
    const entry = await entryOf(headerOf(raw, 'x-request-id')!);
    expect(entry.outcome).to.deep.equal({ status: 408, code: 'request_timeout' });
    expect((await c.call('GET', '/v1/kv/o/slow')).status).to.equal(404);
  });

  it('408 and 431 with problem+json bodies at the socket, before any request was read', async () => {
    const slowHeaders = await rawExchange(c.url, 'GET /v1/auth/me HTTP/1.1\r\nHost: x\r\n');
    expect(slowHeaders).to.match(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(slowHeaders.slice(slowHeaders.indexOf('\r\n\r\n') + 4))).to.include({
      code: 'request_timeout',
    });
    const huge = await rawExchange(
      c.url,
      `GET /v1/auth/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(huge).to.match(/^HTTP\/1\.1 431 /);
    expect(headerOf(huge, 'content-type')).to.equal('application/problem+json');
    expect(headerOf(huge, 'x-content-type-options')).to.equal('nosniff');
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).to.include({
      status: 431,
      code: 'headers_too_large',
    });
  });

  it("408 and 431 carry an X-Request-Id: there is no audit entry, so it names the server log's line", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    );
    const own = await startTestCoffer({ start: { log } });
    try {
      const huge = await rawExchange(
        own.url,
        `GET /v1/auth/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      const slow = await rawExchange(own.url, 'GET /v1/auth/me HTTP/1.1\r\nHost: x\r\n');
      const ids = [huge, slow].map((raw) => headerOf(raw, 'x-request-id'));
      for (const id of ids) expect(id).to.match(/^[A-Za-z0-9]{16}$/);
      expect(ids[0]).to.not.equal(ids[1]);
      const refused = lines.filter((l) => l.event === 'http.refused');
      expect(refused.map((l) => [l.request_id, l.status, l.code])).to.deep.equal([
        [ids[0], 431, 'headers_too_large'],
        [ids[1], 408, 'request_timeout'],
      ]);
    } finally {
      await own.close();
    }
  });

  it('says so when the client left before its answer', async () => {
    const before = new Set(auditLines(c.config.audit.dir!).map((l) => l.seq));
    const head = `PUT /v1/kv/o/gone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${c.rootToken}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"value":`;
    await rawExchange(c.url, head, 100);
    let entry: AuditLine | undefined;
    await eventually(
      () => {
        entry = auditLines(c.config.audit.dir!).find(
          (l) => l.kind === 'request' && !before.has(l.seq) && l.method === 'PUT',
        );
        return entry !== undefined;
      },
      { what: 'the request entry' },
    );
    expect(entry?.outcome).to.deep.include({ delivered: false });
  });

  it('503 while the audit log cannot be written, and its entry says 503 once it can', async () => {
    const [file] = auditFiles(c.config.audit.dir!);
    let refused: { status: number; headers: Headers };
    // As root, permissions do not stop writes; an immutable file does (as a read-only disk would).
    execFileSync('chattr', ['+i', file!]);
    try {
      refused = await c.call('GET', '/v1/auth/me');
    } finally {
      execFileSync('chattr', ['-i', file!]);
    }
    expect(refused.status).to.equal(503);
    await expectRecorded(refused);
  });
});
