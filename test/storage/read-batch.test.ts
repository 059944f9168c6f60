import { expect } from 'chai';
import { type Batch, type BatchAnswer, ReadBatcher } from '../../src/storage/read-batch.js';

/** Answers a batch from `stored`: each key's value, and each range's greatest key in it. */
function answer(stored: Map<string, string>, batch: Batch): BatchAnswer {
  const values = new Map<string, Buffer>();
  for (const key of batch.keys) {
    const value = stored.get(key.toString('latin1'));
    if (value !== undefined) values.set(key.toString('latin1'), Buffer.from(value));
  }
  const lasts = new Map<number, { key: Buffer; value: Buffer }>();
  batch.ranges.forEach((range, i) => {
    const inside = [...stored.keys()]
      .filter((k) => k >= range.start.toString('latin1') && k < range.end.toString('latin1'))
      .sort();
    const last = inside.at(-1);
    if (last !== undefined)
      lasts.set(i, { key: Buffer.from(last, 'latin1'), value: Buffer.from(stored.get(last)!) });
  });
  return { values, lasts };
}

describe('point reads gathered into batches', () => {
  const stored = new Map(
    Array.from({ length: 600 }, (_, i) => [`k${String(i).padStart(3, '0')}`, `v${i}`]),
  );

  it('sends the reads of one turn together, at most 256 to a batch, and hands each its own answer', async () => {
    const batches: Batch[] = [];
    const reads = new ReadBatcher(async (batch) => {
      batches.push(batch);
      return answer(stored, batch);
    });
    const key = (i: number) => Buffer.from(`k${String(i).padStart(3, '0')}`);
    const values = await Promise.all(Array.from({ length: 300 }, (_, i) => reads.get(key(i * 2))));
    expect(values.map((v) => v?.toString())).to.deep.equal(
      Array.from({ length: 300 }, (_, i) => `v${i * 2}`),
    );
    expect(batches.map((b) => b.keys.length + b.ranges.length)).to.deep.equal([256, 44]);

    batches.length = 0;
    const [one, two] = await Promise.all([
      reads.getWithLast(key(7), { start: Buffer.from('k1'), end: Buffer.from('k2') }),
      reads.getWithLast(key(7), { start: Buffer.from('k3'), end: Buffer.from('k4') }),
    ]);
    expect(batches).to.have.length(1);
    expect(one.value?.toString()).to.equal('v7');
    expect(one.last?.key.toString()).to.equal('k199');
    expect(two.last?.key.toString()).to.equal('k399');
    // A read asked once a batch has gone is in the next one.
    await reads.get(key(1));
    expect(batches).to.have.length(2);
  });

  it('rejects every read of a batch that failed, and sends the next batch all the same', async () => {
    let fail = true;
    const reads = new ReadBatcher(async (batch) => {
      if (fail) throw new Error('database away');
      return answer(stored, batch);
    });
    const outcomes = await Promise.allSettled([
      reads.get(Buffer.from('k001')),
      reads.get(Buffer.from('k002')),
    ]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
    fail = false;
    expect((await reads.get(Buffer.from('k002')))?.toString()).to.equal('v2');
  });
});
