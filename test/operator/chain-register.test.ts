import { hostname } from 'node:os';
import { expect } from 'chai';
import type { ApiAuditChains } from '../../src/api/response-schemas.js';
import { auditChainKey } from '../../src/store/layout.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

/** The register as the root token reads it. */
async function registerOf(c: TestCoffer): Promise<ApiAuditChains> {
  return (await c.call('GET', '/v1/sys/audit/chains')).body as unknown as ApiAuditChains;
}

/** The chain of the server now running: the newest, and open. */
async function runningChain(c: TestCoffer): Promise<string> {
  const newest = (await registerOf(c)).chains.at(-1)!;
  expect(newest.closed).to.equal(null);
  return newest.chain;
}

describe("the store's register of audit chains (GET /v1/sys/audit/chains)", function () {
  this.timeout(60_000);
  let c: TestCoffer;
  afterEach(async () => {
    await c.close();
  });

  it('lists each chain in count order with its writer, open while its server runs and closed by its stop; an auditor reads it, a reader may not', async () => {
    c = await startTestCoffer();
    const first = await runningChain(c);
    c = await c.restart();
    const auditor = await c.token({ role: 'auditor' });
    const reader = await c.token({ role: 'reader' });
    expect((await c.call('GET', '/v1/sys/audit/chains', { token: reader })).status).to.equal(403);
    const answer = await c.call('GET', '/v1/sys/audit/chains', { token: auditor });
    expect(answer.status).to.equal(200);
    const register = answer.body as unknown as ApiAuditChains;
    expect(register.count).to.equal(2);
    expect(register.host_seen).to.equal(2);
    expect(register.missing_ordinals).to.deep.equal([]);
    expect(register.chains.map((x) => [x.ordinal, x.chain])).to.deep.equal([
      [1, first],
      [2, await runningChain(c)],
    ]);
    const [stopped, running] = register.chains;
    expect(stopped!.closed!.by).to.equal('close');
    expect(stopped!.writer!.host).to.equal(hostname());
    expect(stopped!.last_checkpoint_seq).to.equal(stopped!.closed!.seq);
    expect(running!.closed).to.equal(null);
    expect(running!.format).to.equal(2);
    expect(running!.damaged).to.equal(false);
    // The read itself is audited under its own action.
    const search = await c.call('GET', '/v1/sys/audit?action=audit.chains', { token: auditor });
    expect((search.body.entries as unknown[]).length).to.be.at.least(2);
  });

  it('names the ordinal whose record was deleted, and a record that fails its check, without failing', async () => {
    c = await startTestCoffer();
    const first = await runningChain(c);
    c = await c.restart();
    const second = await runningChain(c);
    c = await c.restart();
    // Someone who can write the storage deletes the first chain's record and damages the second's.
    await c.storage.atomic([], () => ({
      writes: [
        { op: 'delete' as const, key: auditChainKey(first) },
        { op: 'put' as const, key: auditChainKey(second), value: Buffer.from('not a record') },
      ],
      result: undefined,
    }));
    const register = await registerOf(c);
    expect(register.count).to.equal(3);
    expect(register.chains.map((x) => x.chain)).to.not.include(first);
    const damaged = register.chains.find((x) => x.chain === second)!;
    expect(damaged).to.deep.include({
      damaged: true,
      ordinal: null,
      started_at: null,
      writer: null,
    });
    // Neither the deleted record's ordinal nor the damaged one's is held by a record any more.
    expect(register.missing_ordinals).to.deep.equal([1, 2]);
  });
});
