import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { serveSettings, startProcess } from '../support/process.js';

/** The value of one sample line (`name{labels} value`) in Prometheus text, or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('metrics (GET /v1/sys/metrics)', function () {
  this.timeout(60_000);
  let c: TestCoffer;

  before(async () => {
    c = await startTestCoffer();
  });

  after(async () => {
    await c?.close();
  });

  it('counts requests by operation and status class, their latency and the audit writes, in Prometheus text', async () => {
    await c.put('hiddenns/supersecretkeyname', 'the-value-itself');
    for (let i = 0; i < 5; i++)
      expect((await c.call('GET', '/v1/kv/hiddenns/supersecretkeyname')).status).to.equal(200);
    expect((await c.call('GET', '/v1/kv/hiddenns/nothere')).status).to.equal(404);
    expect(
      (await c.call('GET', '/v1/auth/me', { token: 'cfr_AAAAAAAAAAAAAAAA_nope' })).status,
    ).to.equal(401);
    const res = await c.call('GET', '/v1/sys/metrics');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    const text = res.text;
    expect(
      sample(text, 'coffer_http_requests_total{operation="read",status_class="2xx"}'),
    ).to.equal(5);
    expect(
      sample(text, 'coffer_http_requests_total{operation="read",status_class="4xx"}'),
    ).to.equal(1);
    expect(
      sample(text, 'coffer_http_requests_total{operation="write",status_class="2xx"}'),
    ).to.equal(1);
    expect(sample(text, 'coffer_auth_failures_total')).to.be.at.least(1);
    expect(sample(text, 'coffer_http_request_duration_seconds_count{operation="read"}')).to.equal(
      6,
    );
    expect(sample(text, 'coffer_audit_write_duration_seconds_count')).to.be.at.least(8);
    expect(sample(text, 'coffer_keyring_active_version')).to.equal(1);
    expect(sample(text, 'coffer_kv_waits_held')).to.equal(0);
    expect(text).to.match(/^coffer_process_cpu_seconds_total /m);
    // Never a key, a namespace, a value or a token in a label.
    for (const never of ['hiddenns', 'supersecretkeyname', 'the-value-itself', 'cfr_', c.rootToken])
      expect(text).to.not.include(never);
  });

  it('is for root and the built-in role metrics only: 401 without a token, 403 for others', async () => {
    expect((await c.call('GET', '/v1/sys/metrics', { token: null })).status).to.equal(401);
    const writer = await c.token({ role: 'writer' });
    const refused = await c.call('GET', '/v1/sys/metrics', { token: writer });
    expect(refused.status).to.equal(403);
    expect(refused.body.detail).to.include('read_metrics');
    const scraper = await c.token({ role: 'metrics' });
    expect((await c.call('GET', '/v1/sys/metrics', { token: scraper })).status).to.equal(200);
    // The metrics role reads nothing else.
    expect(
      (await c.call('GET', '/v1/kv/hiddenns/supersecretkeyname', { token: scraper })).status,
    ).to.equal(403);
  });

  it('sums every worker of a server', async () => {
    const { env, root } = serveSettings(2);
    const p = await startProcess(env);
    try {
      const auth = { authorization: `Bearer ${root}` };
      await fetch(`${p.url}/v1/kv/team/app/k`, {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ value: 'v', type: 'config' }),
      });
      // Each on a connection of its own, so the system spreads them over both workers.
      for (let i = 0; i < 40; i++) {
        const res = await fetch(`${p.url}/v1/kv/team/app/k`, {
          headers: { ...auth, connection: 'close' },
        });
        expect(res.status).to.equal(200);
      }
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${p.url}/v1/sys/metrics`, {
          headers: { ...auth, connection: 'close' },
        });
        expect(res.status).to.equal(200);
        const text = await res.text();
        expect(
          sample(text, 'coffer_http_requests_total{operation="read",status_class="2xx"}'),
        ).to.equal(40);
      }
    } finally {
      await p.stop();
    }
  });
});
