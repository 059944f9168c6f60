import { expect } from 'chai';
import { wakesOf } from '../../src/kv/key-changes.js';
import { ChangeRelay } from '../../src/server/change-relay.js';

describe('the supervisor relays a change only to the workers holding a wait it wakes (server/change-relay.ts)', () => {
  const ref = { namespace: 'team/app', key: 'db' };
  const [keyWait, namespaceWait, everyChange] = wakesOf(ref) as [string, string, string];

  it('tells no worker while none waits, and never the worker that made the change', () => {
    const relay = new ChangeRelay<string>();
    expect(relay.targets('a', ref)).to.deep.equal([]);
    relay.interest('a', keyWait, true);
    expect(relay.targets('a', ref)).to.deep.equal([]);
    expect(relay.targets('b', ref)).to.deep.equal(['a']);
  });

  it("tells a worker waiting on the key, on its namespace, or on every change (a stream, a webhook), and no other's", () => {
    const relay = new ChangeRelay<string>();
    relay.interest('key', keyWait, true);
    relay.interest('namespace', namespaceWait, true);
    relay.interest('every', everyChange, true);
    relay.interest('elsewhere', wakesOf({ namespace: 'team/app', key: 'other' })[0]!, true);
    relay.interest('other-namespace', wakesOf({ namespace: 'team', key: 'app' })[1]!, true);
    expect(relay.targets('writer', ref).sort()).to.deep.equal(['every', 'key', 'namespace']);
  });

  it('stops telling a worker once its last wait there is gone, or it is', () => {
    const relay = new ChangeRelay<string>();
    relay.interest('a', keyWait, true);
    relay.interest('a', everyChange, true);
    relay.interest('b', keyWait, true);
    relay.interest('a', keyWait, false);
    expect(relay.targets('c', ref).sort()).to.deep.equal(['a', 'b']);
    relay.interest('a', everyChange, false);
    expect(relay.targets('c', ref)).to.deep.equal(['b']);
    relay.gone('b');
    expect(relay.targets('c', ref)).to.deep.equal([]);
  });
});
