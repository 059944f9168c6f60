/**
 * Group commit for a database: transactions asked for while the database is busy with earlier ones wait
 * here and then go together, as one transaction. At most `inFlight` groups are out at once; the rest gather
 * until one comes back, so the busier the database, the larger the groups — one commit, one flush of the
 * write-ahead log and two round trips for the whole group instead of for each (postgres-backend.ts runs a
 * group). When the database keeps up, a write goes alone at the end of the turn that asked for it.
 */

export interface Groupable {
  /** How many keys it reads or writes: a group holds at most `maxKeys` unless one member alone has more. */
  readonly size: number;
  /** How many bytes it is expected to write: a group holds at most `maxBytes`, unless one member has more. */
  readonly bytes: number;
}

export interface GroupLimits {
  /** Groups out at once. */
  readonly inFlight: number;
  /** Members of one group. */
  readonly maxMembers: number;
  /** Keys of one group (a larger member goes alone). */
  readonly maxKeys: number;
  /** Bytes written by one group (a larger member goes alone): a statement's text stays bounded. */
  readonly maxBytes: number;
}

export class WriteGroups<W extends Groupable> {
  private waiting: W[] = [];
  private out = 0;
  private scheduled = false;

  constructor(
    private readonly limits: GroupLimits,
    /** Runs one group to its end; never rejects (it settles each member itself). */
    private readonly run: (group: W[]) => Promise<void>,
  ) {}

  /** Writes waiting for a group to take them. */
  get queued(): number {
    return this.waiting.length;
  }

  add(write: W): void {
    this.waiting.push(write);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.send();
      });
    }
  }

  /** Sends groups while fewer than `inFlight` are out. */
  private send(): void {
    while (this.out < this.limits.inFlight && this.waiting.length > 0) {
      const group = this.take();
      this.out++;
      void this.run(group).finally(() => {
        this.out--;
        this.send();
      });
    }
  }

  /** The next group: members in the order they came, within the limits. */
  private take(): W[] {
    let keys = 0;
    let bytes = 0;
    let count = 0;
    for (const write of this.waiting) {
      if (count === this.limits.maxMembers) break;
      const over =
        keys + write.size > this.limits.maxKeys || bytes + write.bytes > this.limits.maxBytes;
      if (count > 0 && over) break;
      keys += write.size;
      bytes += write.bytes;
      count++;
    }
    return this.waiting.splice(0, count);
  }
}
