/**
 * Browse: the top-level namespaces, or one namespace's child namespaces and keys, as the API pages them
 * (50 at a time, "Show more" for the next page). Each key shows its type, latest version and time, read
 * from its version list — never its value. Only what the session may list is there: the API leaves the
 * rest out. The filter narrows what is shown to names starting with what is typed.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, pathOf } from './api.js';
import { html } from './html.js';
import { keyHref, namespaceHref } from './routes.js';

interface Listing {
  readonly namespaces: string[];
  readonly keys: string[];
  readonly next_cursor: string | null;
}

interface Versions {
  readonly current_version: number;
  readonly versions: { version: number; type: string; created_at: string }[];
}

interface KeyRow {
  readonly key: string;
  readonly latest?: { version: number; type: string; created_at: string };
  readonly error?: string;
}

const PAGE = 50;

export function Browse({ namespace }: { namespace: string | undefined }) {
  const [namespaces, setNamespaces] = useState<string[]>([]);
  const [keys, setKeys] = useState<KeyRow[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [prefix, setPrefix] = useState('');

  async function load(after: string | null): Promise<void> {
    setLoading(true);
    try {
      const query = `limit=${PAGE}${after ? `&cursor=${encodeURIComponent(after)}` : ''}`;
      const listing = await api<Listing>(
        'GET',
        namespace === undefined ? `/v1/kv?${query}` : `${pathOf(namespace)}?list=true&${query}`,
      );
      const rows = await Promise.all(
        listing.keys.map(async (key): Promise<KeyRow> => {
          try {
            const { versions, current_version } = await api<Versions>(
              'GET',
              `${pathOf(namespace!, key)}/versions`,
            );
            const latest = versions.find((v) => v.version === current_version) ?? versions.at(-1);
            return latest ? { key, latest } : { key };
          } catch (err) {
            return { key, error: messageOf(err) };
          }
        }),
      );
      setNamespaces((before) => (after ? [...before, ...listing.namespaces] : listing.namespaces));
      setKeys((before) => (after ? [...before, ...rows] : rows));
      setCursor(listing.next_cursor);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setLoading(false);
    }
  }

  useEffect(() => {
    setPrefix('');
    void load(null);
  }, [namespace]);

  const child = (name: string) => (namespace === undefined ? name : `${namespace}/${name}`);
  const shownNamespaces = namespaces.filter((n) => n.startsWith(prefix));
  const shownKeys = keys.filter((k) => k.key.startsWith(prefix));
  const title = namespace ?? 'Namespaces';

  return html`
    <section aria-labelledby="browse-title">
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/">All namespaces</a>
        ${(namespace?.split('/') ?? []).map(
          (segment, i, all) =>
            html` / <a href=${namespaceHref(all.slice(0, i + 1).join('/'))}>${segment}</a>`,
        )}
      </nav>
      <h1 id="browse-title">${title}</h1>
      <div class="filter">
        <label for="prefix">Filter by name prefix</label>
        <input
          id="prefix"
          type="search"
          value=${prefix}
          onInput=${(e: Event) => setPrefix((e.currentTarget as HTMLInputElement).value)}
        />
      </div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${
        shownNamespaces.length > 0 &&
        html`<h2>Namespaces</h2>
          <ul class="namespaces">
            ${shownNamespaces.map(
              (name) => html`<li><a href=${namespaceHref(child(name))}>${name}/</a></li>`,
            )}
          </ul>`
      }
      ${
        namespace !== undefined &&
        html`<h2>Keys</h2>
          ${
            shownKeys.length === 0 && !loading
              ? html`<p>No keys here${prefix ? ` starting with “${prefix}”` : ''}.</p>`
              : html`<table class="keys">
                  <thead>
                    <tr><th scope="col">Key</th><th scope="col">Type</th><th scope="col">Version</th><th scope="col">Updated</th></tr>
                  </thead>
                  <tbody>
                    ${shownKeys.map(
                      (row) => html`<tr>
                        <td><a href=${keyHref(namespace, row.key)}>${row.key}</a></td>
                        <td>${row.latest?.type ?? '—'}</td>
                        <td>${row.latest?.version ?? '—'}</td>
                        <td>${row.latest ? new Date(row.latest.created_at).toLocaleString() : (row.error ?? '—')}</td>
                      </tr>`,
                    )}
                  </tbody>
                </table>`
          }`
      }
      ${loading && html`<p class="loading" role="status">Loading…</p>`}
      ${cursor && !loading && html`<button type="button" onClick=${() => load(cursor)}>Show more</button>`}
    </section>
  `;
}
