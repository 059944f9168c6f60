import { join } from 'node:path';
import { expect } from 'chai';
import { HealthCheck } from '../../src/operator/health.js';
import { LmdbBackend } from '../../src/storage/lmdb-backend.js';
import { type AuditLine, auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

describe('GET /v1/sys/health', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c.close();
  });

  it('answers 200 without a token with what it checked, and says nothing more than that', async () => {
    const res = await c.call('GET', '/v1/sys/health', { token: null });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.body).to.deep.include({
      status: 'ok',
      audit: { writable: true, disk_low: false, streams_down: 0 },
    });
    expect(res.body.storage).to.include({ backend: 'lmdb', reachable: true });
    expect(res.body.storage.latency_ms).to.be.a('number').at.least(0);
    expect(Object.keys(res.body).sort()).to.deep.equal(['audit', 'status', 'storage']);
    // A token that does not verify changes nothing: the probe never reads the Authorization header.
    const withBad = await c.call('GET', '/v1/sys/health', { token: 'cfr_not_a_token' });
    expect(withBad.status).to.equal(200);
  });

  it('is recorded in the audit log like every request, with its own action', async () => {
    await c.call('GET', '/v1/sys/health', { token: null });
    const dir = c.config.audit.dir!;
    let lines: AuditLine[] = [];
    await eventually(() => {
      lines = auditLines(dir).filter((l) => l.route === '/v1/sys/health');
      return lines.length > 0;
    });
    expect(lines.at(-1)).to.include({ action: 'sys.health', token_id: null, method: 'GET' });
  });

  it('refuses other methods (405 with Allow) and any query (400), like every endpoint', async () => {
    const post = await c.call('POST', '/v1/sys/health', { token: null });
    expect(post.status).to.equal(405);
    expect(post.headers.get('allow')).to.include('GET');
    const query = await c.call('GET', '/v1/sys/health?verbose=1', { token: null });
    expect(query.status).to.equal(400);
    expect(query.body.code).to.equal('invalid_request');
  });

  it('is in the OpenAPI document as an operation that needs no token', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    const op = doc.paths['/v1/sys/health'].get;
    expect(op.operationId).to.equal('getHealth');
    expect(op.security).to.deep.equal([]);
    expect(op['x-coffer-action']).to.equal('sys.health');
  });
});

describe('the health check', () => {
  it('makes one storage read for probes that arrive together (a flood of probes is not a flood of queries)', async () => {
    const storage = new LmdbBackend({ path: join(tempDir(), 'lmdb') });
    let reads = 0;
    const counted = {
      probe: async () => {
        reads++;
        await storage.get(Buffer.from('Skeyring-generation'));
      },
    };
    try {
      const health = new HealthCheck({ store: counted, backend: 'lmdb' });
      const reports = await Promise.all(Array.from({ length: 50 }, () => health.report()));
      expect(reports.every((r) => r.status === 'ok' && r.storage.reachable)).to.equal(true);
      expect(reads).to.equal(1);
      await health.report();
      expect(reads).to.equal(2); // the next probe reads again: nothing is cached past the one in flight
    } finally {
      await storage.close();
    }
  });
});
