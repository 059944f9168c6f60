import { expect } from 'chai';
import { pino } from 'pino';
import { auditLines } from '../support/audit-lines.js';
import { type AuditReceiver, startAuditReceiver } from '../support/audit-receiver.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

/**
 * A required stream and a 2xx: a write is refused (503, nothing changed) when the stream cannot take its
 * intent before the commit, and once committed it is answered as what happened — never a 503 for a write
 * that is stored.
 */
describe('a required audit stream that fails between a change and its answer', function () {
  this.timeout(60_000);
  let receiver: AuditReceiver;
  let c: TestCoffer;
  before(async () => {
    receiver = await startAuditReceiver();
    c = await startTestCoffer({
      dataDir: tempDir(),
      env: { COFFER_AUDIT_STREAMS: `${receiver.url}?required=true` },
    });
  });
  after(async () => {
    await c?.close();
    await receiver?.close();
  });

  it('an outage is one line in the server log when refusing starts and one, with the count, when it ends — not a line per request', async () => {
    const lines: { event?: string; refused?: number; msg?: string }[] = [];
    const logged = await startAuditReceiver();
    const server = await startTestCoffer({
      dataDir: tempDir(),
      env: { COFFER_AUDIT_STREAMS: `${logged.url}?required=true` },
      start: {
        log: pino(
          { level: 'info' },
          { write: (line: string) => void lines.push(JSON.parse(line)) },
        ),
      },
    });
    try {
      expect((await server.put('quiet/k', 'one')).status).to.equal(201);
      logged.down = true;
      for (let i = 0; i < 30; i++)
        expect((await server.put('quiet/k', `v${i}`)).status).to.equal(503);
      logged.down = false;
      await eventually(async () => (await server.put('quiet/k', 'back')).status === 200, {
        what: 'served again',
        timeout: 15_000,
      });
      const unavailable = lines.filter((l) => l.event === 'audit.unavailable');
      expect(unavailable.length, JSON.stringify(unavailable)).to.equal(1);
      expect(unavailable[0]!.msg).to.include('a required audit stream');
      const available = lines.filter((l) => l.event === 'audit.available');
      expect(available.length).to.equal(1);
      expect(available[0]!.refused).to.be.at.least(30);
    } finally {
      await server.close();
      await logged.close();
    }
  });

  it('a write whose intent the stream took is answered as stored, though the stream then fails; the next is refused before it changes anything', async () => {
    expect((await c.put('held/k', 'one')).status).to.equal(201);
    // The stream goes down on the batch that holds the write's own entry, after it took the intent.
    receiver.downOn = (batch) =>
      batch.some((l) => {
        const e = JSON.parse(l);
        return e.kind === 'request' && e.method === 'PUT' && e.key === 'k';
      });
    const committed = await c.put('held/k', 'two');
    expect(receiver.down, 'the stream went down').to.equal(true);
    expect(committed.status, committed.text).to.equal(200);
    expect(committed.body.version).to.equal(2);
    // Down now: a write is refused before its change, and nothing is written.
    const refused = await c.put('held/k', 'three');
    expect(refused.status).to.equal(503);
    receiver.down = false;
    await eventually(async () => (await c.call('GET', '/v1/kv/held/k')).status === 200, {
      what: 'served again',
      timeout: 15_000,
    });
    const now = await c.call('GET', '/v1/kv/held/k');
    expect([now.body.value, now.body.version]).to.deep.equal(['two', 2]);
    // The log says what the client got: its entry 200, and no audit.refused names it.
    const entries = auditLines(c.config.audit.dir!);
    const line = entries.find(
      (e) => e.kind === 'request' && e.request_id === committed.headers.get('x-request-id'),
    )!;
    expect((line.outcome as { status: number }).status).to.equal(200);
    const refusedSeqs = entries
      .filter((e) => e.event === 'audit.refused')
      .flatMap((e) => e.refused_seqs as number[]);
    expect(refusedSeqs).to.not.include(line.seq);
    // And the stream has it, with its intent before it, once back.
    await eventually(
      () =>
        receiver.lines.some(
          (l) => JSON.parse(l).request_id === line.request_id && JSON.parse(l).kind === 'request',
        ),
      { what: 'the stream has the entry' },
    );
    const intentAt = receiver.lines.findIndex(
      (l) => JSON.parse(l).request_id === line.request_id && JSON.parse(l).kind === 'intent',
    );
    expect(intentAt).to.be.greaterThan(-1);
  });
});
