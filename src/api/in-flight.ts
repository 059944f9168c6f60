/**
 * The requests a server process is still working on, so that a stop drains them: every request in flight
 * is answered with what happened and audited before the audit log and the store close. A request is in
 * flight from the moment the dispatcher takes it until its answer was recorded and sent (or refused), even
 * when its connection was closed under it.
 */
export class InFlight {
  private count = 0;
  private idle: (() => void)[] = [];
  private stopping = false;

  /** Marks one piece of work begun; the function returned ends it (once, however often it is called). */
  begin(): () => void {
    this.count += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.count -= 1;
      if (this.count === 0) for (const wake of this.idle.splice(0)) wake();
    };
  }

  /** Runs `work` as one piece of work in flight. */
  track<T>(work: Promise<T>): Promise<T> {
    const end = this.begin();
    return work.finally(end);
  }

  /** The process is stopping: answers say `Connection: close`, so keep-alive connections end after them. */
  get draining(): boolean {
    return this.stopping;
  }

  drain(): void {
    this.stopping = true;
  }

  /** Resolves true once nothing is in flight, or false after `timeoutMs` with work still in flight. */
  settled(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  get size(): number {
    return this.count;
  }
}
