/**
 * A namespace's trash: the keys deleted directly in it (names, their latest version and when they were
 * deleted; never a value), asked for only when the person opens it, 50 at a time. Each links to its key
 * page, where it is restored or destroyed.
 */
import { useState } from 'preact/hooks';
import type { ApiTrashListing } from '../api/response-schemas.js';
import { api, messageOf, pathOf } from './api.js';
import { Messages } from './messages.js';
import { keyHref } from './routes.js';

const PAGE = 50;

type Deleted = ApiTrashListing['keys'][number];

export function Trash({ namespace }: { namespace: string }) {
  const [keys, setKeys] = useState<Deleted[] | undefined>(undefined);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(false);

  async function load(after: string | null): Promise<void> {
    setLoading(true);
    try {
      const page = await api<ApiTrashListing>(
        'GET',
        `${pathOf(namespace)}?trash=true&limit=${PAGE}${after ? `&cursor=${encodeURIComponent(after)}` : ''}`,
      );
      setKeys((before) => (after && before ? [...before, ...page.keys] : page.keys));
      setCursor(page.next_cursor);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setLoading(false);
    }
  }

  return (
    <section aria-labelledby="trash-title">
      <h2 id="trash-title">Trash</h2>
      <Messages error={error} />
      {keys === undefined ? (
        <button type="button" onClick={() => load(null)} disabled={loading}>
          Show deleted keys
        </button>
      ) : keys.length === 0 ? (
        <p>No deleted keys here.</p>
      ) : (
        <table class="keys trash">
          <thead>
            <tr>
              <th scope="col">Deleted key</th>
              <th scope="col">Type</th>
              <th scope="col">Version</th>
              <th scope="col">Deleted</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr>
                <td>
                  <a href={keyHref(namespace, k.key)}>{k.key}</a>
                </td>
                <td>{k.type}</td>
                <td>{k.version}</td>
                <td>{new Date(k.deleted_at).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor && !loading && (
        <button type="button" onClick={() => load(cursor)}>
          Show more deleted keys
        </button>
      )}
    </section>
  );
}
