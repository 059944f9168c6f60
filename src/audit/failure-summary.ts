/**
 * Summary audit entries for failed authentications past the rate (auth/failure-rate.ts): instead of one line
 * per failure, one `auth.failures` event per client address every `flushMs` (and at shutdown) with the
 * address, the count, the first and last time, and the count per status. Past `maxAddresses` addresses in one
 * interval the rest are added up in one entry with `client: "*"`.
 */
export interface FailureSummaryOptions {
  readonly flushMs: number;
  readonly maxAddresses: number;
  /** Writes one `auth.failures` event with these fields. */
  readonly write: (fields: Record<string, unknown>) => Promise<unknown>;
}

interface Tally {
  count: number;
  first: number;
  last: number;
  statuses: Record<string, number>;
}

export class FailureSummary {
  private tallies = new Map<string, Tally>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: FailureSummaryOptions) {
    this.timer = setInterval(() => void this.flush(), options.flushMs);
    this.timer.unref();
  }

  add(client: string, status: number, now: number): void {
    const name =
      this.tallies.has(client) || this.tallies.size < this.options.maxAddresses ? client : '*';
    let tally = this.tallies.get(name);
    if (!tally) {
      tally = { count: 0, first: now, last: now, statuses: {} };
      this.tallies.set(name, tally);
    }
    tally.count++;
    tally.last = now;
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
  }

  async flush(): Promise<void> {
    const tallies = this.tallies;
    this.tallies = new Map();
    for (const [client, t] of tallies) {
      await this.options.write({
        client,
        count: t.count,
        first: new Date(t.first).toISOString(),
        last: new Date(t.last).toISOString(),
        statuses: t.statuses,
      });
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
