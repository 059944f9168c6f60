/**
 * One chain's audit streams, as its writer (audit/writer.ts) sees them: every batch handed to each, in
 * order — to a required one at once, and waited for; to the others gathered, and shipped when the writer
 * has sealed them (every SHIP_MS at the most) — whether a required one is down (the log then refuses
 * requests, as when its own file cannot be written); their states for the metrics and the health report.
 */
import type { StreamState } from './audit-stream.js';

/** What the writer needs of an audit stream (audit-stream.ts). */
export interface ChainStream {
  readonly name: string;
  readonly required: boolean;
  readonly up: boolean;
  offer(lines: readonly string[]): Promise<void>;
  close(waitMs: number): Promise<number>;
  state(): StreamState;
}

/** How long an answer waits for a required stream to take its line before it is refused (503). */
export const STREAM_WAIT_MS = 2_000;

/**
 * How long lines gather for the streams that are not required, at the most, before the writer seals them
 * and they are shipped: one signature and one send (a syscall, a packet, a POST) for many of the writer's
 * small batches — a read's batch is a few lines, and its answer waits for neither. The local chain holds
 * the lines meanwhile: they are late to the receiver by at most this, never lost. A ship's cost is mostly
 * fixed (a signature made cold, about 300 µs on a 2-core VM, and a send): reads with one stream ran at
 * 0.962 of none with 100 ms and 0.976 with 250 ms (docs/performance.md).
 */
export const SHIP_MS = 250;

export class ChainStreams {
  /** Lines handed over and not yet shipped to the streams that are not required. */
  private gathered: string[] = [];
  /** The seq of the last line offered. */
  private offeredThrough = 0;
  /** The seq to ship through (a seal's) once it is offered (shipThrough()). */
  private shipAt: number | null = null;
  private readonly required: readonly ChainStream[];
  private readonly others: readonly ChainStream[];

  constructor(private readonly streams: readonly ChainStream[] = []) {
    this.required = streams.filter((stream) => stream.required);
    this.others = streams.filter((stream) => !stream.required);
  }

  /** Whether lines wait to be shipped (shipThrough()). */
  get gathering(): boolean {
    return this.gathered.length > 0;
  }

  /** Whether answers wait for a stream (a required one is configured). */
  get anyRequired(): boolean {
    return this.required.length > 0;
  }

  /** Why requests are refused now: a required stream whose last send failed; null while none is down. */
  failure(): string | null {
    const down = this.streams.find((stream) => stream.required && !stream.up);
    return down ? `required audit stream ${down.name} does not take lines` : null;
  }

  /** Each stream's state: whether it takes lines, and how many wait for it (gathered ones included). */
  states(): StreamState[] {
    // A stream's lag counts the lines gathered for it too: written locally, not yet delivered.
    return this.streams.map((stream) => {
      const state = stream.state();
      return stream.required ? state : { ...state, lag: state.lag + this.gathered.length };
    });
  }

  /**
   * Offers `lines` (the chain's, through seq `last`) to every required stream, in order, and gathers them
   * for the others (shipThrough()); when `waited` (someone waits for an answer), resolves once every
   * required stream has them — true — or false after STREAM_WAIT_MS. The streams still get the lines, in
   * order, when they are back.
   */
  async offer(lines: readonly string[], last: number, waited: boolean): Promise<boolean> {
    if (this.others.length > 0) for (const line of lines) this.gathered.push(line);
    this.offeredThrough = last;
    this.shipIfOffered();
    if (this.required.length === 0) return true;
    const delivered = this.required.map((stream) => stream.offer(lines));
    if (!waited) return true;
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      Promise.all(delivered).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), STREAM_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    return inTime;
  }

  /**
   * Hands the lines gathered through seq `seq` (the writer's seal) to the streams that are not required,
   * once that line is offered; lines after it wait for the next seal.
   */
  shipThrough(seq: number): void {
    this.shipAt = seq;
    this.shipIfOffered();
  }

  private shipIfOffered(): void {
    if (this.shipAt === null || this.offeredThrough < this.shipAt) return;
    this.ship(this.offeredThrough - this.shipAt);
    this.shipAt = null;
  }

  /** Hands the lines gathered to the streams that are not required, but for the newest `holdBack`. */
  private ship(holdBack = 0): void {
    const through = this.gathered.length - holdBack;
    if (through <= 0) return;
    const lines = holdBack === 0 ? this.gathered : this.gathered.slice(0, through);
    this.gathered = holdBack === 0 ? [] : this.gathered.slice(through);
    for (const stream of this.others) void stream.offer(lines);
  }

  /** Ships what was gathered, sends what waits, for up to STREAM_WAIT_MS each, and closes them. */
  async close(): Promise<void> {
    this.ship();
    for (const stream of this.streams) await stream.close(STREAM_WAIT_MS);
  }
}
