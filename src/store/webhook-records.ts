/**
 * Webhooks in storage: each one's definition (`H<name>`: destination, filters, signing secret), its
 * delivery cursor (`I<name>`: the last event position delivered, naming the webhook's id, so a webhook
 * deleted and made again under the same name starts afresh) and the lease that says which server process
 * delivers them all (`Swebhook-lease`). Every record is sealed with its storage key bound in: the signing
 * secret is never readable from the storage, and a record moved to another name fails its check.
 */
import type { StorageBackend } from '../storage/backend.js';
import { WEBHOOK_LEASE_KEY, WEBHOOKS_RANGE, webhookCursorKey, webhookKey } from './layout.js';
import { RecordIntegrityError, type RecordSeal } from './record-seal.js';

export interface WebhookRecord {
  /** Drawn when the webhook is made, kept when it is changed: its cursor names it. */
  readonly id: string;
  readonly url: string;
  /** Namespace patterns as scopes write them; empty: every namespace. */
  readonly namespaces: readonly string[];
  /** Operations; empty: all. */
  readonly kinds: readonly string[];
  /** The Standard Webhooks signing secret, `whsec_<base64>`. */
  readonly secret: string;
  /** Milliseconds since the epoch. */
  readonly created_at: number;
  readonly updated_at: number;
  readonly secret_set_at: number;
  /** The token id of whoever last changed it. */
  readonly by: string;
}

export interface WebhookCursor {
  /** The webhook (its id) this cursor belongs to. */
  readonly id: string;
  /** The last event position delivered (or passed over by the filters). */
  readonly delivered: number;
}

interface LeaseRecord {
  readonly holder: string;
  /** Milliseconds since the epoch. */
  readonly until: number;
}

/** What a change decides from the stored definition (undefined: none yet). */
export type WebhookChange<T> = (current: WebhookRecord | undefined) => {
  readonly record: WebhookRecord;
  readonly cursor?: number;
  readonly result: T;
};

export class WebhookRecords {
  constructor(
    private readonly storage: StorageBackend,
    private readonly seal: RecordSeal,
    private readonly onIntegrityError: (error: RecordIntegrityError) => void,
  ) {}

  /** Every webhook by name, in name order; one whose record fails its check is reported and left out. */
  async list(): Promise<{ readonly name: string; readonly record: WebhookRecord }[]> {
    const out: { name: string; record: WebhookRecord }[] = [];
    for await (const { key, value } of this.storage.scan(WEBHOOKS_RANGE)) {
      const record = this.opened(key, value);
      if (record) out.push({ name: Buffer.from(key).toString('latin1', 1), record });
    }
    return out;
  }

  async get(name: string): Promise<WebhookRecord | undefined> {
    const key = webhookKey(name);
    const bytes = await this.storage.get(key);
    return bytes ? this.opened(key, bytes) : undefined;
  }

  /**
   * Creates or changes webhook `name` as `change` decides, in one transaction, with its cursor set to
   * `cursor` when the change gives one (a new webhook starts after the log's last position).
   */
  async put<T>(name: string, change: WebhookChange<T>): Promise<T> {
    const key = webhookKey(name);
    const cursorKey = webhookCursorKey(name);
    return this.storage.atomic([key, cursorKey], ([stored]) => {
      const current = stored ? this.seal.open<WebhookRecord>('webhook', key, stored) : undefined;
      const decided = change(current);
      return {
        writes: [
          { op: 'put', key, value: this.seal.seal('webhook', key, decided.record) },
          ...(decided.cursor === undefined
            ? []
            : [
                {
                  op: 'put' as const,
                  key: cursorKey,
                  value: this.seal.seal('webhook-cursor', cursorKey, {
                    id: decided.record.id,
                    delivered: decided.cursor,
                  } satisfies WebhookCursor),
                },
              ]),
        ],
        result: decided.result,
      };
    });
  }

  /** Deletes webhook `name` and its cursor; whether it existed. */
  async remove(name: string): Promise<boolean> {
    const key = webhookKey(name);
    const cursorKey = webhookCursorKey(name);
    return this.storage.atomic([key, cursorKey], ([stored]) => ({
      writes: stored
        ? [
            { op: 'delete', key },
            { op: 'delete', key: cursorKey },
          ]
        : [],
      result: stored !== undefined,
    }));
  }

  /** The cursor of webhook `name` as made with id `id`; undefined when there is none for that id. */
  async cursor(name: string, id: string): Promise<number | undefined> {
    const key = webhookCursorKey(name);
    const bytes = await this.storage.get(key);
    if (!bytes) return undefined;
    const cursor = this.seal.open<WebhookCursor>('webhook-cursor', key, bytes);
    return cursor.id === id ? cursor.delivered : undefined;
  }

  /**
   * Moves the cursor of webhook `name` (id `id`) on to `delivered`, unless the webhook is gone or was made
   * again since, or the cursor is already there or past it. Whether it moved.
   */
  async advance(name: string, id: string, delivered: number): Promise<boolean> {
    const key = webhookKey(name);
    const cursorKey = webhookCursorKey(name);
    return this.storage.atomic([key, cursorKey], ([stored, storedCursor]) => {
      const record = stored ? this.seal.open<WebhookRecord>('webhook', key, stored) : undefined;
      const cursor = storedCursor
        ? this.seal.open<WebhookCursor>('webhook-cursor', cursorKey, storedCursor)
        : undefined;
      if (record?.id !== id || (cursor?.id === id && cursor.delivered >= delivered))
        return { writes: [], result: false };
      return {
        writes: [
          {
            op: 'put',
            key: cursorKey,
            value: this.seal.seal('webhook-cursor', cursorKey, {
              id,
              delivered,
            } satisfies WebhookCursor),
          },
        ],
        result: true,
      };
    });
  }

  /**
   * Takes (or keeps) the delivery lease for `holder` until `now + ms`, when no other holder has it now.
   * Whether `holder` holds it.
   */
  async lease(holder: string, now: number, ms: number): Promise<boolean> {
    const key = WEBHOOK_LEASE_KEY;
    return this.storage.atomic([key], ([stored]) => {
      const lease = stored ? this.seal.open<LeaseRecord>('webhook-lease', key, stored) : undefined;
      if (lease && lease.holder !== holder && lease.until > now)
        return { writes: [], result: false };
      const next: LeaseRecord = { holder, until: now + ms };
      return {
        writes: [{ op: 'put', key, value: this.seal.seal('webhook-lease', key, next) }],
        result: true,
      };
    });
  }

  /** Lets the lease go, if `holder` holds it (a stop): another process takes it at once. */
  async release(holder: string): Promise<void> {
    const key = WEBHOOK_LEASE_KEY;
    await this.storage.atomic([key], ([stored]) => {
      const lease = stored ? this.seal.open<LeaseRecord>('webhook-lease', key, stored) : undefined;
      return {
        writes: lease?.holder === holder ? [{ op: 'delete' as const, key }] : [],
        result: undefined,
      };
    });
  }

  private opened(key: Uint8Array, bytes: Uint8Array): WebhookRecord | undefined {
    try {
      return this.seal.open<WebhookRecord>('webhook', key, bytes);
    } catch (err) {
      if (!(err instanceof RecordIntegrityError)) throw err;
      this.onIntegrityError(err);
      return undefined;
    }
  }
}
