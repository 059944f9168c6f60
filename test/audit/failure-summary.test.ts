import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, tempDir } from '../support/harness.js';

describe('a flood of failed authentications cannot fill the audit log', function () {
  this.timeout(60_000);

  it('records failures past the rate as summary entries per address, holds their 401s back, and serves good tokens at once', async () => {
    const c = await startTestCoffer({
      dataDir: tempDir(),
      env: { COFFER_AUTH_FLOOD_BURST: '5', COFFER_AUTH_FLOOD_RATE: '1' },
    });
    const good = await c.token({ role: 'reader' });
    expect((await c.call('GET', '/v1/auth/me', { token: good })).status).to.equal(200);
    const started = performance.now();
    const flood = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        c.call('GET', '/v1/kv/a/b', {
          token: i % 2 ? null : `cfr_${'Q'.repeat(16)}_${String(i).padStart(43, 'f')}`,
        }),
      ),
    );
    expect(flood.every((r) => r.status === 401)).to.equal(true);
    expect(performance.now() - started).to.be.at.least(900);
    const t = performance.now();
    expect((await c.call('GET', '/v1/auth/me', { token: good })).status).to.equal(200);
    expect(performance.now() - t).to.be.below(900);
    await c.close();

    const lines = auditLines(c.config.audit.dir!);
    const single = lines.filter(
      (l) => l.kind === 'request' && (l.outcome as { status: number }).status === 401,
    );
    const summaries = lines.filter((l) => l.kind === 'event' && l.event === 'auth.failures');
    expect(single.length).to.be.within(5, 8);
    expect(summaries.length).to.be.at.least(1);
    for (const s of summaries) {
      expect(s).to.include.keys('client', 'count', 'first', 'last', 'statuses');
      expect(s.client).to.equal('127.0.0.1');
      expect(Date.parse(s.first as string)).to.be.at.most(Date.parse(s.last as string));
    }
    expect(single.length + summaries.reduce((n, s) => n + (s.count as number), 0)).to.equal(80);
    expect(
      summaries.reduce((n, s) => n + ((s.statuses as Record<string, number>)['401'] ?? 0), 0),
    ).to.equal(80 - single.length);
  });
});
