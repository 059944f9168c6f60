import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { expect } from 'chai';
import { onEachBackend } from '../support/each-backend.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { runToExit, serveSettings, startProcess } from '../support/process.js';

/** The value of one sample line (`name{labels} value`) in Prometheus text, or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('storage metrics', function () {
  this.timeout(60_000);

  onEachBackend((start) => {
    let c: TestCoffer;
    before(async () => {
      c = await start();
    });
    after(async () => {
      await c?.close();
    });
    const metrics = async (): Promise<string> => {
      const res = await c.call('GET', '/v1/sys/metrics');
      expect(res.status).to.equal(200);
      return res.text;
    };

    it('times every durable write and counts the writes each commit made durable together', async () => {
      const before = await metrics();
      const writesBefore = sample(before, 'coffer_storage_write_duration_seconds_count') ?? 0;
      // Fifty writes at once: group commit (PostgreSQL's groups, lmdb-js's batches) shares commits.
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => c.put(`team/app/k${i}`, `v${i}`)),
      );
      for (const a of answers) expect(a.status).to.equal(201);
      const text = await metrics();
      const writes = sample(text, 'coffer_storage_write_duration_seconds_count')!;
      // Each PUT writes its version and the audit log's database copy (at least one write each).
      expect(writes - writesBefore).to.be.at.least(50);
      // Every durable write is in exactly one commit.
      expect(sample(text, 'coffer_storage_commit_writes_sum')).to.equal(writes);
      const commits = sample(text, 'coffer_storage_commit_writes_count')!;
      expect(commits).to.be.below(writes, 'no commit carried more than one write');
      expect(sample(text, 'coffer_storage_commit_writes_bucket{le="+Inf"}')).to.equal(commits);
      expect(sample(text, 'coffer_storage_write_duration_seconds_bucket{le="+Inf"}')).to.equal(
        writes,
      );
    });

    it("shows PostgreSQL's pool, queue and notification lag, and nothing of the kind on LMDB", async () => {
      const text = await metrics();
      if (c.config.storage === 'lmdb') {
        expect(text).to.not.match(/^coffer_pg_/m);
        expect(text).to.not.match(/^coffer_storage_writes_queued/m);
        return;
      }
      expect(sample(text, 'coffer_pg_pool_max')).to.be.at.least(1);
      const busy = sample(text, 'coffer_pg_pool_connections{state="busy"}')!;
      const idle = sample(text, 'coffer_pg_pool_connections{state="idle"}')!;
      expect(busy + idle).to.be.within(1, sample(text, 'coffer_pg_pool_max')!);
      expect(sample(text, 'coffer_pg_pool_waiting')).to.equal(0);
      expect(sample(text, 'coffer_storage_writes_queued')).to.equal(0);
      // The listening connection probes as soon as it listens: its notification comes back in well under a second.
      await eventually(async () => {
        const lag = sample(await metrics(), 'coffer_pg_notification_lag_seconds');
        return lag !== undefined && lag > 0 && lag < 1;
      });
    });
  });
});

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

  it('sums every worker of a server, also on its own metrics address (no token there)', async () => {
    const { env, root } = serveSettings(2, { COFFER_METRICS_PORT: '0' });
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
      const own = /"metrics_url":"([^"]+)"/.exec(p.stdout())?.[1];
      expect(own).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const scraped = await fetch(own!);
      expect(scraped.status).to.equal(200);
      expect(scraped.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
      expect(scraped.headers.get('cache-control')).to.equal('no-store');
      expect(
        sample(
          await scraped.text(),
          'coffer_http_requests_total{operation="read",status_class="2xx"}',
        ),
      ).to.equal(40);
      expect((await fetch(own!, { method: 'POST' })).status).to.equal(405);
      expect((await fetch(own!.replace('/metrics', '/v1/kv/team/app/k'))).status).to.equal(404);
      // The API's own metrics still need a token.
      expect((await fetch(`${p.url}/v1/sys/metrics`)).status).to.equal(401);
    } finally {
      await p.stop();
    }
  });
});

describe('the metrics address', function () {
  this.timeout(60_000);

  it('refuses the start when it cannot listen there, naming the setting', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { env } = serveSettings(1, { COFFER_METRICS_PORT: String(port) });
      const exited = await runToExit(env, 30_000);
      expect(exited.code).to.not.equal(0);
      expect(exited.stderr + exited.stdout).to.include('COFFER_METRICS_PORT');
      expect(exited.stdout).to.not.include('coffer listening');
    } finally {
      taken.close();
    }
  });
});
