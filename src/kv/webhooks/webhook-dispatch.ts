/**
 * Which process delivers the webhooks: the one that holds the delivery lease (store/webhook-records.ts),
 * taken and renewed every 2 s for 10 s. Every server process — each worker, on every server sharing a
 * PostgreSQL database — runs one of these and tries; one holds it, and runs one delivery per webhook
 * (webhook-delivery.ts), so there is one message in flight per webhook and its order holds. A holder that
 * stops lets the lease go (another takes it within 2 s); one that dies or stalls loses it after 10 s, and
 * its successor goes on from the stored cursors (repeating at most the last second's messages). An attempt
 * is ended a second before the lease as last renewed runs out (webhook-delivery.ts), and a delivery being
 * stopped ends its attempt at once: the renewal never waits on a receiver, and no two processes send at once.
 * A webhook put or removed here is taken up at once; elsewhere at the next renewal. A delivery the storage
 * failed (a database cut) starts again at the next renewal, from its stored cursor.
 */
import { randomUUID } from 'node:crypto';
import type { WebhookRecord, WebhookRecords } from '../../store/webhook-records.js';
import type { KeyChanges } from '../key-changes.js';
import { type DeliveryDeps, type DeliveryState, WebhookDelivery } from './webhook-delivery.js';

const RENEW_MS = 2_000;
const LEASE_MS = 10_000;

export interface DispatchDeps extends DeliveryDeps {
  readonly records: WebhookRecords;
  readonly changes: KeyChanges;
}

/** Whether a delivery started with `running` must start again for `stored` (its webhook changed). */
function changed(running: WebhookRecord, stored: WebhookRecord): boolean {
  return running.id !== stored.id || running.updated_at !== stored.updated_at;
}

export class WebhookDispatch {
  private readonly holder = randomUUID();
  private readonly deliveries = new Map<string, WebhookDelivery>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private again = false;
  private holding = false;
  private closed = false;
  /** Until when (Date.now()) this process holds the lease, as its last renewal took it. */
  private leaseUntil = 0;
  private readonly deliveryDeps: DeliveryDeps;

  constructor(private readonly deps: DispatchDeps) {
    this.deliveryDeps = { ...deps, leaseLeft: () => this.leaseUntil - Date.now() };
  }

  start(): void {
    this.timer = setInterval(() => this.touched(), RENEW_MS);
    this.timer.unref();
    this.touched();
  }

  /** The deliveries this process runs now (none unless it holds the lease). */
  states(): DeliveryState[] {
    return [...this.deliveries.values()].map((d) => d.state());
  }

  /** Renews the lease and takes up the webhooks as stored now (after a put or a remove: at once). */
  touched(): void {
    this.again = true;
    this.ticking = this.ticking.then(async () => {
      if (!this.again || this.closed) return;
      this.again = false;
      await this.tick().catch((err: Error) =>
        this.deps.logger.warn(
          { event: 'webhook.dispatch_failed', reason: err.message },
          'the webhook deliveries could not be taken up now; tried again in %d s',
          RENEW_MS / 1000,
        ),
      );
    });
  }

  private async tick(): Promise<void> {
    const stored = await this.deps.records.list();
    // No webhook: no lease taken (nor a write every renewal).
    if (stored.length === 0) {
      await this.stopAll();
      if (this.holding) await this.deps.records.release(this.holder);
      this.holding = false;
      return;
    }
    let held: boolean;
    const asked = Date.now();
    try {
      held = await this.deps.records.lease(this.holder, asked, LEASE_MS);
    } catch (err) {
      // The storage cannot be reached: whoever holds the lease cannot renew it either. Stop delivering
      // rather than outlive a lease another process may take.
      await this.stopAll();
      throw err;
    }
    this.holding = held;
    // Counted from before the renewal was asked: the store may have granted it at any moment since.
    this.leaseUntil = held ? asked + LEASE_MS : 0;
    if (!held) return this.stopAll();
    const names = new Set(stored.map((s) => s.name));
    for (const [name, delivery] of this.deliveries)
      if (!names.has(name)) {
        this.deliveries.delete(name);
        await delivery.close();
      }
    for (const { name, record } of stored) {
      const running = this.deliveries.get(name);
      if (running && !running.ended && !changed(running.record, record)) continue;
      if (running) await running.close();
      const delivery = new WebhookDelivery(
        name,
        record,
        this.deliveryDeps,
        this.deps.changes.follow(),
      );
      this.deliveries.set(name, delivery);
      delivery.start();
    }
  }

  private async stopAll(): Promise<void> {
    const running = [...this.deliveries.values()];
    this.deliveries.clear();
    await Promise.all(running.map((d) => d.close()));
  }

  /** Stops every delivery (each stores its cursor) and lets the lease go. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.ticking;
    await this.stopAll();
    if (this.holding) await this.deps.records.release(this.holder).catch(() => undefined);
  }
}
