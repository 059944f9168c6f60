/**
 * Webhooks (root): each one's destination, what it is sent and how far delivery has got; a new one, its
 * secret rotated, a test message, or deleted. A signing secret is shown once, in the answer that drew it,
 * and never again (docs/events.md, "Signed webhooks").
 */
import { useEffect, useState } from 'preact/hooks';
import type {
  ApiWebhookList,
  ApiWebhookTest,
  ApiWebhookWithSecret,
} from '../api/webhook-schemas.js';
import { api, messageOf } from './api.js';
import { Messages } from './messages.js';

type Webhook = ApiWebhookList['webhooks'][number];

/** The name rule of a webhook, as the input's pattern (escaped for the `v` flag, as on the roles page). */
const NAME_PATTERN = '[a-z][a-z0-9_\\-]{0,63}';

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function WebhooksView() {
  const [webhooks, setWebhooks] = useState<Webhook[]>([]);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  /** A secret just drawn, shown until dismissed. */
  const [secret, setSecret] = useState<{ name: string; value: string } | undefined>(undefined);
  const [adding, setAdding] = useState<{ refused?: string } | undefined>(undefined);

  async function load(): Promise<void> {
    try {
      setWebhooks((await api<ApiWebhookList>('GET', '/v1/sys/webhooks')).webhooks);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  useEffect(() => {
    void load();
  }, []);

  async function add(event: Event): Promise<void> {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const name = String(form.get('name') ?? '').trim();
    const namespaces = list(String(form.get('namespaces') ?? ''));
    const kinds = list(String(form.get('kinds') ?? ''));
    try {
      const made = await api<ApiWebhookWithSecret>(
        'PUT',
        `/v1/sys/webhooks/${encodeURIComponent(name)}`,
        {
          url: String(form.get('url') ?? '').trim(),
          ...(namespaces.length > 0 ? { namespaces } : {}),
          ...(kinds.length > 0 ? { kinds } : {}),
        },
      );
      if (made.secret) setSecret({ name, value: made.secret });
      setAdding(undefined);
      setNotice(`Saved webhook ${name}.`);
      await load();
    } catch (err) {
      setAdding({ refused: messageOf(err) });
    }
  }

  async function rotate(w: Webhook): Promise<void> {
    if (!confirm(`Draw a new signing secret for ${w.name}? The old one signs nothing more.`))
      return;
    try {
      const done = await api<ApiWebhookWithSecret>(
        'PUT',
        `/v1/sys/webhooks/${encodeURIComponent(w.name)}`,
        { url: w.url, namespaces: w.namespaces, kinds: w.kinds, rotate_secret: true },
      );
      if (done.secret) setSecret({ name: w.name, value: done.secret });
      setNotice(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  async function test(w: Webhook): Promise<void> {
    try {
      const result = await api<ApiWebhookTest>(
        'POST',
        `/v1/sys/webhooks/${encodeURIComponent(w.name)}/test`,
      );
      setNotice(
        result.delivered
          ? `${w.name}: the receiver took the test message (${result.status}, ${result.ms} ms).`
          : `${w.name}: the test message was not delivered: ${result.error ?? 'no answer'}.`,
      );
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  async function remove(w: Webhook): Promise<void> {
    if (!confirm(`Delete webhook ${w.name}? Nothing more is sent to it.`)) return;
    try {
      await api('DELETE', `/v1/sys/webhooks/${encodeURIComponent(w.name)}`);
      setNotice(`Deleted webhook ${w.name}.`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <Messages error={error} notice={notice} />
      {secret && (
        <div class="secret-once" role="status">
          <p>
            The signing secret of <strong>{secret.name}</strong>, shown this once: give it to the
            receiver, which checks every message with it.
          </p>
          <code>{secret.value}</code>
          <button type="button" onClick={() => setSecret(undefined)}>
            I have kept it
          </button>
        </div>
      )}
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Sent to</th>
            <th scope="col">Namespaces</th>
            <th scope="col">Kinds</th>
            <th scope="col">Delivered</th>
            <th scope="col">Behind</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {webhooks.map((w) => (
            <tr>
              <td>{w.name}</td>
              <td>{w.url}</td>
              <td>{w.namespaces.join(', ') || 'all'}</td>
              <td>{w.kinds.join(', ') || "every key's change"}</td>
              <td>{w.delivered}</td>
              <td>{w.behind}</td>
              <td>
                <button type="button" onClick={() => void test(w)} aria-label={`Test ${w.name}`}>
                  Test
                </button>
                <button
                  type="button"
                  onClick={() => void rotate(w)}
                  aria-label={`Rotate secret of ${w.name}`}
                >
                  Rotate secret
                </button>
                <button
                  type="button"
                  onClick={() => void remove(w)}
                  aria-label={`Delete ${w.name}`}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {adding ? (
        <form class="add" onSubmit={add}>
          <h2>A new webhook</h2>
          <label for="w-name">Name</label>
          <input id="w-name" name="name" required pattern={NAME_PATTERN} />
          <label for="w-url">
            URL (https://…; public addresses only, unless the server allows private ones)
          </label>
          <input id="w-url" name="url" type="url" required />
          <label for="w-namespaces">
            Namespaces (comma separated patterns: payments/*, shared; empty: all)
          </label>
          <input id="w-namespaces" name="namespaces" />
          <label for="w-kinds">
            Kinds (comma separated: write, delete, …, token.revoke, keyring.rotate; empty: every
            key's change)
          </label>
          <input id="w-kinds" name="kinds" />
          {adding.refused && (
            <p class="error" role="alert">
              Not saved: {adding.refused}
            </p>
          )}
          <button type="submit">Save</button>
          <button type="button" onClick={() => setAdding(undefined)}>
            Cancel
          </button>
        </form>
      ) : (
        <button type="button" onClick={() => setAdding({})}>
          New webhook…
        </button>
      )}
    </section>
  );
}
