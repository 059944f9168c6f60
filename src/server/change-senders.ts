/**
 * Which workers send their changes to the supervisor at all. The relay (change-relay.ts) passes a change
 * on only to the workers holding a wait it wakes; while no other worker holds any wait, a worker need not
 * send it either — with no waits, that was a message and a receive in the supervisor for every write.
 *
 * So the supervisor tells each serving worker whether another worker holds a wait now (`kv.siblings`), and
 * a worker sends only while told so. A worker starts out sending (until it is ready, nothing is told it),
 * so a worker not yet told never keeps a change back.
 *
 * No change is lost by it: a worker's interest (KeyInterest) is answered only once every other worker has
 * acknowledged that it must send. A worker decides whether to send after its change committed; so a change
 * it kept back was committed before it heard, before the answer to the interest, and before the waiting
 * worker's first read, which finds it. A notice that no wait is held any more needs no answer: a worker
 * still sending meanwhile only sends what is not needed.
 */
import type { ChangeRelay } from './change-relay.js';
import type { SiblingsWait } from './messages.js';

interface Told {
  /** What the worker was last told. */
  waiting: boolean;
  /** That notice's id. */
  id: number;
  /** Whether the worker has acknowledged it (a `false` needs no acknowledgement). */
  confirmed: boolean;
}

/** An interest whose answer waits for the workers that must send to say they know it. */
interface HeldAnswer<W> {
  readonly from: W;
  readonly answer: () => void;
  readonly until: Set<W>;
}

export class ChangeSenders<W> {
  private readonly told = new Map<W, Told>();
  private held: HeldAnswer<W>[] = [];
  private lastId = 0;

  constructor(
    private readonly relay: Pick<ChangeRelay<W>, 'waitsBesides'>,
    private readonly tell: (worker: W, notice: SiblingsWait) => void,
  ) {}

  /** `worker` is serving: it sends every change until told that no other worker waits. */
  ready(worker: W, serving: Iterable<W>): void {
    this.told.set(worker, { waiting: true, id: 0, confirmed: true });
    this.update(serving);
  }

  /**
   * The relay has taken `from`'s interest (held or dropped): tells the workers whose answer changed, and
   * calls `answer` once every other worker that must send has acknowledged it.
   */
  interest(from: W, serving: Iterable<W>, answer: () => void): void {
    this.update(serving);
    const until = new Set<W>();
    for (const [worker, told] of this.told)
      if (worker !== from && told.waiting && !told.confirmed) until.add(worker);
    if (until.size === 0) answer();
    else this.held.push({ from, answer, until });
  }

  /** `worker` acknowledged notice `id`; only its latest notice counts. */
  taken(worker: W, id: number): void {
    const told = this.told.get(worker);
    if (told === undefined || told.id !== id || told.confirmed) return;
    told.confirmed = true;
    this.release(worker);
  }

  /** `worker` is gone: nothing waits for it, and the others are told again what holds now. */
  gone(worker: W, serving: Iterable<W>): void {
    this.told.delete(worker);
    this.held = this.held.filter((held) => held.from !== worker);
    this.release(worker);
    this.update(serving);
  }

  private release(worker: W): void {
    const still: HeldAnswer<W>[] = [];
    for (const held of this.held) {
      held.until.delete(worker);
      if (held.until.size === 0) held.answer();
      else still.push(held);
    }
    this.held = still;
  }

  /**
   * Tells each serving worker whose answer changed. One told that no other worker waits any more is no
   * longer waited for: the interests it was to acknowledge have all been dropped since.
   */
  private update(serving: Iterable<W>): void {
    const quiet: W[] = [];
    for (const worker of serving) {
      const told = this.told.get(worker);
      if (told === undefined) continue;
      const waiting = this.relay.waitsBesides(worker);
      if (waiting === told.waiting) continue;
      told.waiting = waiting;
      told.id = ++this.lastId;
      told.confirmed = !waiting;
      this.tell(worker, { type: 'kv.siblings', waiting, id: told.id });
      if (!waiting) quiet.push(worker);
    }
    for (const worker of quiet) this.release(worker);
  }
}
