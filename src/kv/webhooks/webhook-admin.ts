/**
 * Managing webhooks (/v1/sys/webhooks; root, the manage_webhooks privilege): each one's destination (checked
 * against server-side request forgery: destination.ts), the namespaces and operations it is sent, and its
 * signing secret — drawn from the CSPRNG when the webhook is made or the secret rotated, shown in that
 * answer only, stored sealed. A new webhook is sent the changes committed after it was made. Each change is
 * an operator event (the log and the audit log), naming the webhook, never its secret or URL's path.
 */
import { randomBytes } from 'node:crypto';
import { parsePattern } from '../../auth/patterns.js';
import { invalid, notFound } from '../../errors.js';
import type { EventKindName } from '../../model/kv-operations.js';
import type { OperatorEvents } from '../../model/operator-events.js';
import type { EventLog } from '../../store/event-log.js';
import type { WebhookRecord, WebhookRecords } from '../../store/webhook-records.js';
import { checkDestination, parseDestination } from './destination.js';
import type { WebhookDispatch } from './webhook-dispatch.js';
import { type Attempt, sendMessage } from './webhook-send.js';

/** What a webhook's name may be. */
export const WEBHOOK_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
/** The most webhooks a store keeps. */
const MOST = 64;

export interface WebhookInput {
  readonly url: string;
  readonly namespaces?: readonly string[];
  readonly kinds?: readonly EventKindName[];
  /** Draw a new signing secret (the old one stops signing at once). */
  readonly rotate_secret?: boolean;
}

export interface WebhookView {
  readonly name: string;
  readonly url: string;
  readonly namespaces: readonly string[];
  readonly kinds: readonly string[];
  readonly created_at: string;
  readonly updated_at: string;
  readonly secret_set_at: string;
  /** The last event position delivered (or passed over by the filters). */
  readonly delivered: number;
  /** Events in the log after it (those the filters leave out included). */
  readonly behind: number;
}

export interface WebhookAdminDeps {
  readonly records: WebhookRecords;
  readonly log: EventLog;
  readonly dispatch: WebhookDispatch;
  readonly events: OperatorEvents;
  readonly allowPrivate: boolean;
  readonly userAgent: string;
  readonly now: () => number;
}

/** A signing secret as Standard Webhooks writes one: `whsec_` and 32 random bytes in base64. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class WebhookAdmin {
  constructor(private readonly deps: WebhookAdminDeps) {}

  async list(): Promise<WebhookView[]> {
    const { last } = await this.deps.log.horizon();
    const out: WebhookView[] = [];
    for (const { name, record } of await this.deps.records.list())
      out.push(await this.view(name, record, last));
    return out;
  }

  async get(name: string): Promise<WebhookView> {
    const record = await this.deps.records.get(name);
    if (!record) throw notFound(`no webhook "${name}"`);
    return this.view(name, record, (await this.deps.log.horizon()).last);
  }

  /**
   * Creates or changes webhook `name`; resolves to whether it was created, its view, and its secret when
   * one was drawn (created, or rotated).
   */
  async put(
    name: string,
    input: WebhookInput,
    by: string,
  ): Promise<{ created: boolean; view: WebhookView; secret?: string }> {
    const url = parseDestination(input.url);
    const namespaces = [...new Set(input.namespaces ?? [])];
    namespaces.forEach((text, i) => {
      if (!parsePattern(text))
        throw invalid(
          `namespaces: ${JSON.stringify(text)} is not a namespace pattern (*, a/*, a/b)`,
          [{ field: `/namespaces/${i}`, in: 'body', message: 'must be a namespace pattern' }],
        );
    });
    await checkDestination(url, this.deps.allowPrivate);
    if ((await this.deps.records.get(name)) === undefined) {
      const count = (await this.deps.records.list()).length;
      if (count >= MOST) throw invalid(`a store keeps at most ${MOST} webhooks`);
    }
    const { last } = await this.deps.log.horizon();
    const now = this.deps.now();
    const drawn = newSecret();
    const outcome = await this.deps.records.put(name, (current) => {
      const rotated = current === undefined || input.rotate_secret === true;
      const record: WebhookRecord = {
        id: current?.id ?? randomBytes(12).toString('base64url'),
        url: url.href,
        namespaces,
        kinds: [...new Set(input.kinds ?? [])],
        secret: rotated ? drawn : current.secret,
        created_at: current?.created_at ?? now,
        updated_at: now,
        secret_set_at: rotated ? now : current.secret_set_at,
        by,
      };
      return {
        record,
        ...(current === undefined ? { cursor: last } : {}),
        result: { created: current === undefined, rotated, record },
      };
    });
    this.deps.dispatch.touched();
    await this.deps.events.record(
      'webhook.put',
      {
        webhook: name,
        created: outcome.created,
        secret_rotated: outcome.rotated,
        host: url.host,
        namespaces,
        kinds: outcome.record.kinds,
        by,
      },
      `webhook ${name} ${outcome.created ? 'created' : 'changed'}${outcome.rotated && !outcome.created ? ', its secret rotated' : ''}`,
    );
    return {
      created: outcome.created,
      view: await this.view(name, outcome.record, last),
      ...(outcome.rotated ? { secret: outcome.record.secret } : {}),
    };
  }

  async remove(name: string, by: string): Promise<void> {
    if (!(await this.deps.records.remove(name))) throw notFound(`no webhook "${name}"`);
    this.deps.dispatch.touched();
    await this.deps.events.record(
      'webhook.delete',
      { webhook: name, by },
      `webhook ${name} deleted`,
    );
  }

  /**
   * Sends webhook `name` one `webhook.test` message now, signed as every message is, from this process and
   * outside the order of its events; resolves to what happened.
   */
  async test(name: string, by: string): Promise<Attempt & { readonly message_id: string }> {
    const record = await this.deps.records.get(name);
    if (!record) throw notFound(`no webhook "${name}"`);
    const messageId = `test_${randomBytes(12).toString('base64url')}`;
    const attempt = await sendMessage(
      parseDestination(record.url),
      record.secret,
      { id: messageId, type: 'webhook.test', data: { webhook: name } },
      this.deps,
    );
    await this.deps.events.record(
      'webhook.test',
      {
        webhook: name,
        message_id: messageId,
        delivered: attempt.delivered,
        ...(attempt.status === undefined ? {} : { status: attempt.status }),
        ...(attempt.error === undefined ? {} : { error: attempt.error }),
        ms: attempt.ms,
        by,
      },
      `webhook ${name} test message ${attempt.delivered ? 'delivered' : 'not delivered'}`,
    );
    return { ...attempt, message_id: messageId };
  }

  private async view(name: string, record: WebhookRecord, last: number): Promise<WebhookView> {
    const delivered = (await this.deps.records.cursor(name, record.id)) ?? last;
    return {
      name,
      url: record.url,
      namespaces: record.namespaces,
      kinds: record.kinds,
      created_at: iso(record.created_at),
      updated_at: iso(record.updated_at),
      secret_set_at: iso(record.secret_set_at),
      delivered,
      behind: Math.max(0, last - delivered),
    };
  }
}
