/**
 * The receiving end of PostgreSQL's LISTEN/NOTIFY for the backend's announced keys
 * (postgres-backend.ts): one connection of its own per backend, outside the pool, that LISTENs on the
 * table's channel and hands each notification's key to the listeners.
 *
 * Notifications sent while this connection is down are lost, so when it is lost it reconnects by itself
 * (after 100 ms, doubling to at most 5 s) and, each time it is listening (again), tells the listeners that
 * anything may have changed (`key` undefined): they read what they cache again. Together with each
 * server's own periodic check this bounds how long a lost notification can go unnoticed.
 *
 * While it listens it also probes, every PROBE_MS: a notification of a random nonce on a channel of its own
 * (`<channel>_probe`, which servers of an earlier version do not hear), sent through the pool as any
 * write's is, timed until this connection hears it. `lagSeconds` (the metrics' notification lag) is the
 * last probe's time, or how long the oldest unheard one has been out when that is longer; one is sent as
 * the connection is lost, so the lag grows from that moment until the connection is back.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Called with the key a commit wrote, or undefined after a gap in which notifications may have been lost. */
export type ChangeListener = (key: Uint8Array | undefined) => void;

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;
const PROBE_MS = 10_000;
/** Probes kept waiting for: older unheard ones are taken as lost (the gauge still shows the oldest's age). */
const MAX_OUTSTANDING = 16;

export class PostgresListener {
  private readonly listeners = new Set<ChangeListener>();
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = FIRST_RETRY_MS;
  private timer: NodeJS.Timeout | null = null;
  private connecting = false;
  private readonly probeChannel: string;
  private probeTimer: NodeJS.Timeout | null = null;
  /** Probes sent and not heard yet: nonce → when sent (performance.now()), oldest first. */
  private readonly outstanding = new Map<string, number>();
  private lastLag: number | undefined;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    /** Sends a notification on `channel` with `payload` (through the pool, as a write's NOTIFY goes). */
    private readonly notify: (channel: string, payload: string) => Promise<unknown>,
  ) {
    this.probeChannel = `${channel}_probe`;
  }

  /** The notification lag as the probes measure it, in seconds; undefined before the first probe. */
  lagSeconds(): number | undefined {
    const oldest = this.outstanding.values().next();
    const waiting = oldest.done ? undefined : (performance.now() - oldest.value) / 1000;
    if (waiting === undefined) return this.lastLag;
    return this.lastLag === undefined ? waiting : Math.max(this.lastLag, waiting);
  }

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
    if (this.probeTimer !== null) clearInterval(this.probeTimer);
    this.probeTimer = null;
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
      // Nothing is heard until the connection is back: a probe out now shows the lag growing from here.
      this.probe();
      this.retry();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (message) => {
      if (message.payload === undefined) return;
      if (message.channel === this.probeChannel) return this.heard(message.payload);
      if (message.channel !== this.channel) return;
      // One NOTIFY names every announced key of a transaction, comma separated.
      for (const hex of message.payload.split(',')) this.tell(Buffer.from(hex, 'hex'));
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"; LISTEN "${this.probeChannel}"`);
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
    if (this.probeTimer === null) {
      this.probeTimer = setInterval(() => this.probe(), PROBE_MS);
      this.probeTimer.unref();
    }
    this.probe();
  }

  /** Sends one probe (a failure to send leaves it outstanding: the lag grows while nothing gets through). */
  private probe(): void {
    if (this.closed) return;
    const nonce = randomBytes(9).toString('base64url');
    this.outstanding.set(nonce, performance.now());
    if (this.outstanding.size > MAX_OUTSTANDING) {
      // Keep the oldest (the gauge's age) and the newest; drop the one after the oldest.
      const [, second] = this.outstanding.keys();
      this.outstanding.delete(second!);
    }
    this.notify(this.probeChannel, nonce).catch(() => undefined);
  }

  /** A probe heard: its time is the lag; the probes sent before it are not coming any more. */
  private heard(nonce: string): void {
    const sent = this.outstanding.get(nonce);
    if (sent === undefined) return; // another server's probe
    this.lastLag = (performance.now() - sent) / 1000;
    for (const [other, at] of this.outstanding) if (at <= sent) this.outstanding.delete(other);
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
