import { expect } from 'chai';
import type { RequestOutcome } from '../../src/api/outcome.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

describe('request outcomes (the seam the audit log plugs into)', () => {
  let c: TestCoffer;
  const outcomes: RequestOutcome[] = [];
  before(async () => {
    c = await startTestCoffer({ start: { onOutcome: (o) => outcomes.push(o) } });
  });
  after(async () => {
    await c.close();
  });

  it('reports each request once with caller, route template, status and error code, never the raw URL', async () => {
    const token = await c.token({ role: 'reader' });
    outcomes.length = 0;
    await c.put('o/k', 'v', 'secret');
    await c.call('GET', '/v1/kv/o/k', { token });
    await c.call('PUT', '/v1/kv/o/k', { token, json: { value: 'v', type: 'secret' } });
    await c.call('DELETE', `/v1/auth/token/${token}`);
    await c.call('GET', '/v1/kv/o/k', { token: null });
    await eventually(() => outcomes.length >= 5, { what: 'five outcomes reported' });
    expect(outcomes.map((o) => [o.method, o.status, o.code, o.principalId])).to.deep.equal([
      ['PUT', 201, null, 'root'],
      ['GET', 200, null, token.slice(4, 20)],
      ['PUT', 403, 'forbidden', token.slice(4, 20)],
      ['DELETE', 204, null, 'root'],
      ['GET', 401, 'unauthorized', null],
    ]);
    expect(outcomes[3]!.route).to.equal('/v1/auth/token/{token}');
    expect(JSON.stringify(outcomes)).to.not.include(token.slice(21));
    expect(outcomes.every((o) => o.durationMs >= 0)).to.equal(true);
  });
});
