import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { eventually } from '../support/eventually.js';
import { startTestCoffer } from '../support/harness.js';

describe('free space for the audit log', () => {
  it('is logged as low, with the numbers and what to do, when it is below audit.min_free_bytes', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean))
          lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    // No disk here has 100 TB free.
    const c = await startTestCoffer({
      env: { COFFER_AUDIT_MIN_FREE_BYTES: String(10 ** 14) },
      start: { log: pino({ level: 'info' }, sink) },
    });
    try {
      await eventually(() => lines.some((l) => l.event === 'disk.low'), { what: 'disk.low' });
      const low = lines.find((l) => l.event === 'disk.low');
      expect(low).to.include({ dir: c.config.audit.dir, min_free_bytes: 10 ** 14 });
      expect(low!.free_bytes).to.be.a('number');
      expect(String(low!.msg)).to.include('coffer audit archive');
    } finally {
      await c.close();
    }
    const quiet = await startTestCoffer({ start: { log: pino({ level: 'info' }, sink) } });
    await quiet.close();
    expect(lines.filter((l) => l.event === 'disk.low')).to.have.length(1);
  });
});
