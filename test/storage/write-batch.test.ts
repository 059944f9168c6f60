import { expect } from 'chai';
import { WriteGroups } from '../../src/storage/write-batch.js';

interface Write {
  readonly name: string;
  readonly size: number;
  readonly bytes: number;
}

const write = (name: string, size = 1, bytes = 10): Write => ({ name, size, bytes });
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('writes gathered into groups (group commit)', () => {
  it('sends at most inFlight groups; writes asked meanwhile wait and go together when one comes back', async () => {
    const sent: string[][] = [];
    const finish: (() => void)[] = [];
    const groups = new WriteGroups<Write>(
      { inFlight: 1, maxMembers: 100, maxKeys: 100, maxBytes: 1000 },
      (group) => {
        sent.push(group.map((w) => w.name));
        return new Promise<void>((resolve) => finish.push(resolve));
      },
    );
    groups.add(write('a'));
    await turn();
    expect(sent).to.deep.equal([['a']]);
    for (const name of ['b', 'c', 'd']) groups.add(write(name));
    await turn();
    expect(sent).to.have.length(1); // the first group is still out
    finish.shift()!();
    await turn();
    expect(sent).to.deep.equal([['a'], ['b', 'c', 'd']]);
  });

  it('keeps a group within its members, keys and bytes, and sends a write larger than the limits alone', async () => {
    const sent: string[][] = [];
    const groups = new WriteGroups<Write>(
      { inFlight: 10, maxMembers: 3, maxKeys: 10, maxBytes: 100 },
      async (group) => {
        sent.push(group.map((w) => w.name));
      },
    );
    const writes = [
      write('m1'),
      write('m2'),
      write('m3'),
      write('m4'), // a fourth member: the next group
      write('k1', 8),
      write('k2', 8), // 16 keys would pass 10
      write('b1', 1, 60),
      write('b2', 1, 60), // 120 bytes would pass 100
      write('huge', 50, 5000), // alone, whatever the limits
      write('after'),
    ];
    for (const w of writes) groups.add(w);
    await turn();
    await turn();
    expect(sent).to.deep.equal([
      ['m1', 'm2', 'm3'],
      ['m4', 'k1'],
      ['k2', 'b1'],
      ['b2'],
      ['huge'],
      ['after'],
    ]);
  });
});
