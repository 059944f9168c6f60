/**
 * The receiving end of PostgreSQL's LISTEN/NOTIFY for the backend's announced keys
 * (postgres-backend.ts): one connection of its own per backend, outside the pool, that LISTENs on the
 * table's channel and hands each notification's key to the listeners.
 *
 * Notifications sent while this connection is down are lost, so when it is lost it reconnects by itself
 * (after 100 ms, doubling to at most 5 s) and, each time it is listening (again), tells the listeners that
 * anything may have changed (`key` undefined): they read what they cache again. Together with each
 * server's own periodic check this bounds how long a lost notification can go unnoticed.
 */
import pg from 'pg';

/** Called with the key a commit wrote, or undefined after a gap in which notifications may have been lost. */
export type ChangeListener = (key: Uint8Array | undefined) => void;

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;

export class PostgresListener {
  private readonly listeners = new Set<ChangeListener>();
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = FIRST_RETRY_MS;
  private timer: NodeJS.Timeout | null = null;
  private connecting = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
  ) {}

  /** Adds a listener; the first one opens the connection. Returns the function that removes it. */
  add(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    if (this.client === null && this.timer === null && !this.closed) this.connect();
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** Opens the listening connection, unless one is being opened already (one connection, one gap). */
  private connect(): void {
    if (this.connecting) return;
    this.connecting = true;
    void this.open().finally(() => {
      this.connecting = false;
    });
  }

  private async open(): Promise<void> {
    const client = new pg.Client(this.config);
    // A lost connection is both an 'error' and an 'end' event; either starts the next attempt, once.
    let lost = false;
    const onLost = (): void => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      this.retry();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (message) => {
      if (message.channel !== this.channel || message.payload === undefined) return;
      // One NOTIFY names every announced key of a transaction, comma separated.
      for (const hex of message.payload.split(',')) this.tell(Buffer.from(hex, 'hex'));
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
    } catch {
      onLost();
      await client.end().catch(() => undefined);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryMs = FIRST_RETRY_MS;
    // What was announced before LISTEN took effect was not heard.
    this.tell(undefined);
  }

  private retry(): void {
    if (this.closed || this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
  }

  private tell(key: Uint8Array | undefined): void {
    for (const listener of this.listeners) {
      try {
        listener(key);
      } catch {
        // A listener's failure is its own; the others are still told.
      }
    }
  }
}
