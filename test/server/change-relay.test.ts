import { expect } from 'chai';
import { wakesOf } from '../../src/kv/key-changes.js';
import { ChangeRelay } from '../../src/server/change-relay.js';
import { ChangeSenders } from '../../src/server/change-senders.js';
import type { SiblingsWait } from '../../src/server/messages.js';

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

  it('tells of an event naming no key (a revocation, a rotation) only the workers waiting on every change', () => {
    const relay = new ChangeRelay<string>();
    relay.interest('key', keyWait, true);
    relay.interest('namespace', namespaceWait, true);
    relay.interest('every', everyChange, true);
    expect(relay.targets('writer', undefined)).to.deep.equal(['every']);
    expect(relay.targets('every', undefined)).to.deep.equal([]);
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

describe('a worker sends its changes only while another worker holds a wait (server/change-senders.ts)', () => {
  const ref = { namespace: 'team/app', key: 'db' };
  const [keyWait] = wakesOf(ref) as [string];

  /** A supervisor's view: the relay, the notices told, and the interests answered. */
  function supervisor(workers: readonly string[]) {
    const relay = new ChangeRelay<string>();
    const told: { worker: string; notice: SiblingsWait }[] = [];
    const senders = new ChangeSenders<string>(relay, (worker, notice) =>
      told.push({ worker, notice }),
    );
    const serving = new Set<string>();
    for (const worker of workers) {
      serving.add(worker);
      senders.ready(worker, serving);
    }
    const answered: string[] = [];
    const interest = (worker: string, held: boolean, name = worker): void => {
      relay.interest(worker, keyWait, held);
      senders.interest(worker, serving, () => answered.push(name));
    };
    /** What `worker` was last told, and acknowledges it. */
    const ack = (worker: string): boolean => {
      const last = told.filter((t) => t.worker === worker).at(-1)!.notice;
      senders.taken(worker, last.id);
      return last.waiting;
    };
    const lastTold = (worker: string) => told.filter((t) => t.worker === worker).at(-1)?.notice;
    return { relay, senders, serving, told, answered, interest, ack, lastTold };
  }

  it('tells each ready worker that no other waits, and to send again once one does', () => {
    const s = supervisor(['a', 'b']);
    expect(s.lastTold('a')?.waiting).to.equal(false);
    expect(s.lastTold('b')?.waiting).to.equal(false);
    s.interest('b', true);
    expect(s.lastTold('a')?.waiting).to.equal(true);
    // b's own waits are no reason for b to send.
    expect(s.lastTold('b')?.waiting).to.equal(false);
  });

  it("answers a worker's interest only once every other worker that must send has acknowledged it", () => {
    const s = supervisor(['a', 'b', 'c']);
    s.interest('a', true);
    expect(s.answered).to.deep.equal([]);
    expect(s.ack('b')).to.equal(true);
    expect(s.answered).to.deep.equal([]);
    expect(s.ack('c')).to.equal(true);
    expect(s.answered).to.deep.equal(['a']);
  });

  it('holds a second interest for a notice still unacknowledged from the first, though it tells nothing new', () => {
    const s = supervisor(['a', 'b', 'c']);
    s.interest('a', true);
    s.ack('b');
    const before = s.told.length;
    // c already knows to send for a: nothing new to tell it, but it has not said it knows.
    s.interest('b', true);
    // a too must now send (b waits); b was told when a's interest came.
    expect(s.told.slice(before).map((t) => t.worker)).to.deep.equal(['a']);
    expect(s.answered).to.deep.equal([]);
    s.ack('c');
    expect(s.answered).to.deep.equal(['a']);
    s.ack('a');
    expect(s.answered).to.deep.equal(['a', 'b']);
  });

  it('answers at once where no other worker must start sending, and when waits are dropped', () => {
    const s = supervisor(['a', 'b']);
    s.interest('a', true);
    s.ack('b');
    s.interest('a', true, 'again');
    expect(s.answered).to.deep.equal(['a', 'again']);
    s.interest('a', false, 'dropped');
    expect(s.answered).to.deep.equal(['a', 'again', 'dropped']);
    expect(s.lastTold('b')?.waiting).to.equal(false);
  });

  it('counts only the latest notice: an acknowledgement of an older one answers nothing', () => {
    const s = supervisor(['a', 'b']);
    s.interest('a', true, 'first');
    const first = s.lastTold('b')!;
    s.interest('a', false, 'dropped');
    s.interest('a', true, 'second');
    s.senders.taken('b', first.id);
    expect(s.answered).to.deep.equal(['first', 'dropped']);
    s.ack('b');
    expect(s.answered).to.deep.equal(['first', 'dropped', 'second']);
  });

  it('waits for no worker that is gone, and answers none for a worker that is gone', () => {
    const s = supervisor(['a', 'b', 'c']);
    s.interest('a', true);
    s.ack('b');
    s.serving.delete('c');
    s.relay.gone('c');
    s.senders.gone('c', s.serving);
    expect(s.answered).to.deep.equal(['a']);
    s.interest('b', true);
    s.serving.delete('b');
    s.relay.gone('b');
    s.senders.gone('b', s.serving);
    expect(s.answered).to.deep.equal(['a']);
  });

  it('leaves a worker not yet ready sending every change: it is told nothing', () => {
    const s = supervisor(['a']);
    s.interest('a', true);
    expect(s.told.some((t) => t.worker === 'late')).to.equal(false);
    expect(s.answered).to.deep.equal(['a']);
    s.serving.add('late');
    s.senders.ready('late', s.serving);
    // a waits: the late worker keeps sending, and is told nothing it does not already do.
    expect(s.lastTold('late')).to.equal(undefined);
  });
});
