/**
 * One chain's audit streams, as its writer (audit/writer.ts) sees them: every batch offered to each, in
 * order, and the required ones waited for; whether a required one is down (the log then refuses requests, as
 * when its own file cannot be written); their states for the metrics and the health report.
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

export class ChainStreams {
  constructor(private readonly streams: readonly ChainStream[] = []) {}

  /** Whether answers wait for a stream (a required one is configured). */
  get anyRequired(): boolean {
    return this.streams.some((stream) => stream.required);
  }

  /** Why requests are refused now: a required stream whose last send failed; null while none is down. */
  failure(): string | null {
    const down = this.streams.find((stream) => stream.required && !stream.up);
    return down ? `required audit stream ${down.name} does not take lines` : null;
  }

  /** Each stream's state: whether it takes lines, and how many wait for it. */
  states(): StreamState[] {
    return this.streams.map((stream) => stream.state());
  }

  /**
   * Offers `lines` to every stream, in order; when `waited` (someone waits for an answer), resolves once
   * every required stream has them — true — or false after STREAM_WAIT_MS. The streams still get the lines,
   * in order, when they are back.
   */
  async offer(lines: readonly string[], waited: boolean): Promise<boolean> {
    const required: Promise<void>[] = [];
    for (const stream of this.streams) {
      const delivered = stream.offer(lines);
      if (stream.required) required.push(delivered);
    }
    if (required.length === 0 || !waited) return true;
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      Promise.all(required).then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), STREAM_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    return inTime;
  }

  /** Sends what waits, for up to STREAM_WAIT_MS each, and closes them. */
  async close(): Promise<void> {
    for (const stream of this.streams) await stream.close(STREAM_WAIT_MS);
  }
}
