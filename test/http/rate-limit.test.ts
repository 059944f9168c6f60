import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

describe('failed authentications per client address', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer({ env: { COFFER_AUTH_FAILURE_BURST: '3', COFFER_AUTH_FAILURE_RATE: '0.5' } });
  });
  after(async () => {
    await c.close();
  });

  it('answers 429 with Retry-After, held back about a second, once the budget is used; verified tokens keep working', async () => {
    const good = await c.token({ role: 'reader' });
    expect((await c.call('GET', '/v1/auth/me', { token: good })).status).to.equal(200);
    const id = good.slice(4, 20);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await c.call('GET', '/v1/auth/me', { token: `cfr_${id}_${String(i).padStart(43, 'w')}` })).status);
    statuses.push((await c.call('GET', '/v1/auth/me', { token: null })).status);
    expect(statuses).to.deep.equal([401, 401, 401, 429]);

    const started = performance.now();
    const [limited, served] = await Promise.all([
      c.call('GET', '/v1/kv/a/b', { token: 'cfr_AAAAAAAAAAAAAAAA_' + 'q'.repeat(43) }),
      (async () => {
        const t = performance.now();
        const res = await c.call('GET', '/v1/auth/me', { token: good });
        return { status: res.status, ms: performance.now() - t };
      })(),
    ]);
    expect(limited.status).to.equal(429);
    expect(limited.body.code).to.equal('too_many_requests');
    expect(Number(limited.headers.get('retry-after'))).to.be.at.least(1);
    expect(performance.now() - started).to.be.at.least(900);
    expect(served.status).to.equal(200);
    // Not held back: a tarpitted answer takes at least a second.
    expect(served.ms).to.be.below(900);
  });
});
