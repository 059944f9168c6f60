/**
 * A real EventSource (the `eventsource` package, the WHATWG client for Node) on GET /v1/events, with a
 * bearer token: what it received, in order, and ways to wait for it. It reconnects by itself after a
 * disconnect, sending Last-Event-ID, as a browser does.
 */
import { EventSource } from 'eventsource';

export interface ReceivedEvent {
  readonly id: string;
  readonly type: string;
  // biome-ignore lint/suspicious/noExplicitAny: an event's JSON, which each test reads as it expects
  readonly data: any;
  readonly raw: string;
}

export interface TestEventStream {
  readonly received: ReceivedEvent[];
  /** Every HTTP status the stream's connections were answered with, in order. */
  readonly statuses: number[];
  /** Resolves once `count` events have arrived (rejects after `ms`). */
  until(count: number, ms?: number): Promise<ReceivedEvent[]>;
  close(): void;
}

export function openEventStream(
  url: string,
  token: string,
  query = '',
  headers: Record<string, string> = {},
): TestEventStream {
  const received: ReceivedEvent[] = [];
  const statuses: number[] = [];
  const waiters: (() => void)[] = [];
  const source = new EventSource(`${url}/v1/events${query}`, {
    fetch: async (input, init) => {
      const res = await fetch(input, {
        ...init,
        headers: { ...init.headers, ...headers, authorization: `Bearer ${token}` },
      });
      statuses.push(res.status);
      return res;
    },
  });
  for (const kind of ['kv', 'token', 'keyring'])
    source.addEventListener(kind, (event) => {
      received.push({
        id: event.lastEventId,
        type: event.type,
        data: JSON.parse(event.data),
        raw: event.data,
      });
      for (const wake of waiters.splice(0)) wake();
    });
  return {
    received,
    statuses,
    async until(count, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (received.length < count) {
        if (Date.now() >= deadline)
          throw new Error(
            `expected ${count} events, received ${received.length} (statuses ${statuses.join(',')})`,
          );
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
      return received.slice(0, count);
    },
    close: () => source.close(),
  };
}

/** Resolves once `stream` has been answered (its first connection), so that what follows is heard. */
export async function opened(stream: TestEventStream, ms = 5_000): Promise<number> {
  const deadline = Date.now() + ms;
  while (stream.statuses.length === 0) {
    if (Date.now() >= deadline) throw new Error('the event stream was not answered');
    await new Promise((r) => setTimeout(r, 20));
  }
  return stream.statuses[0]!;
}
