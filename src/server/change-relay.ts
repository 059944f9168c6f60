/**
 * Which workers hear of a key another worker changed. Every worker used to be told of every change, for
 * the waits it might hold: a send in the supervisor and a receive in each other worker, for every write,
 * whatever the number of workers. Now each worker tells the supervisor where it holds waits (a key, a
 * namespace, or every change: an event stream, a webhook's delivery: kv/key-changes.ts) and where it no
 * longer does, and a change goes only to the workers holding a wait it wakes.
 *
 * A worker reads only once the supervisor has taken its interest (KeyInterestTaken), so a change made
 * meanwhile is not lost: either it reached the supervisor after the interest, and is relayed, or before,
 * and the worker's first read, which comes after the answer to its interest, finds it.
 */
import { type KeyRef, wakesOf } from '../app.js';

export class ChangeRelay<W> {
  /** Per worker, where it holds waits. */
  private readonly interests = new Map<W, Set<string>>();

  /** `worker` holds waits at `where` now, or (`held` false) no longer. */
  interest(worker: W, where: string, held: boolean): void {
    const wheres = this.interests.get(worker);
    if (held) {
      if (wheres) wheres.add(where);
      else this.interests.set(worker, new Set([where]));
    } else if (wheres) {
      wheres.delete(where);
      if (wheres.size === 0) this.interests.delete(worker);
    }
  }

  /** `worker` is gone: none of its waits are held any more. */
  gone(worker: W): void {
    this.interests.delete(worker);
  }

  /** Whether a worker other than `worker` holds any wait: only then need `worker` tell of its changes. */
  waitsBesides(worker: W): boolean {
    for (const holder of this.interests.keys()) if (holder !== worker) return true;
    return false;
  }

  /** The workers, other than `from`, that hold a wait `ref`'s change wakes (undefined: every change's alone). */
  targets(from: W, ref: KeyRef | undefined): W[] {
    const wakes = wakesOf(ref);
    const out: W[] = [];
    for (const [worker, wheres] of this.interests)
      if (worker !== from && wakes.some((where) => wheres.has(where))) out.push(worker);
    return out;
  }
}
