/**
 * Browse: the top-level namespaces, or one namespace's child namespaces (a tree that opens in place:
 * namespace-tree.tsx) and keys, as the API pages them
 * (50 at a time, "Show more" for the next page). Each key shows its type, latest version and time, from
 * the listing itself (`details=true`: one call and one audit entry a page) — never its value. Only what the session may list is there: the API leaves the
 * rest out. The search asks the API for the names that start with what is typed (`?prefix=`, a range of
 * the store: every match however many pages the namespace has), a quarter second after the typing stops.
 * A new key is made here (new-key.tsx); the namespace's deleted keys are shown on asking (trash.tsx).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiListing } from '../api/response-schemas.js';
import { api, messageOf, pathOf } from './api.js';
import { type Capability, mayDo } from './capabilities.js';
import { Messages } from './messages.js';
import { NAME_CHARACTERS, NAME_RULE } from './names.js';
import { NamespaceTree } from './namespace-tree.js';
import { NewKey } from './new-key.js';
import { keyHref, namespaceHref } from './routes.js';
import { Trash } from './trash.js';

/** A listed key's latest version, its type and time (`details=true`). */
type KeyDetail = NonNullable<ApiListing['details']>[number];

interface KeyRow {
  readonly key: string;
  /** Absent for a key deleted between the listing's scan and its details. */
  readonly latest?: KeyDetail;
}

const PAGE = 50;
const TYPING_MS = 250;

export function Browse({
  namespace,
  capabilities,
}: {
  namespace: string | undefined;
  /** What the session may do where: New key is offered only where it may write. */
  capabilities: readonly Capability[];
}) {
  const [namespaces, setNamespaces] = useState<string[]>([]);
  const [keys, setKeys] = useState<KeyRow[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [prefix, setPrefix] = useState('');
  /** The prefix of what is shown (a cursor belongs to it). */
  const [shown, setShown] = useState('');
  /** Each load's number: an answer to an earlier one than the last is dropped. */
  const loads = useRef(0);

  async function load(after: string | null, withPrefix: string): Promise<void> {
    const mine = ++loads.current;
    setLoading(true);
    try {
      const query =
        `limit=${PAGE}` +
        (withPrefix ? `&prefix=${encodeURIComponent(withPrefix)}` : '') +
        (after ? `&cursor=${encodeURIComponent(after)}` : '');
      const listing = await api<ApiListing>(
        'GET',
        namespace === undefined
          ? `/v1/kv?${query}`
          : `${pathOf(namespace)}?list=true&details=true&${query}`,
      );
      const details = new Map((listing.details ?? []).map((d) => [d.key, d]));
      const rows = listing.keys.map((key): KeyRow => {
        const latest = details.get(key);
        return latest ? { key, latest } : { key };
      });
      if (mine !== loads.current) return;
      setShown(withPrefix);
      setNamespaces((before) => (after ? [...before, ...listing.namespaces] : listing.namespaces));
      setKeys((before) => (after ? [...before, ...rows] : rows));
      setCursor(listing.next_cursor);
      setError(undefined);
    } catch (err) {
      if (mine === loads.current) setError(messageOf(err));
    } finally {
      if (mine === loads.current) setLoading(false);
    }
  }

  // Each namespace is a Browse of its own (main.tsx keys it by the namespace).
  useEffect(() => {
    void load(null, '');
  }, []);

  const valid = prefix === '' || NAME_CHARACTERS.test(prefix);
  useEffect(() => {
    if (!valid || prefix === shown) return;
    const timer = setTimeout(() => void load(null, prefix), TYPING_MS);
    return () => clearTimeout(timer);
  }, [prefix]);

  const shownNamespaces = valid ? namespaces : [];
  const shownKeys = valid ? keys : [];
  const title = namespace ?? 'Namespaces';

  return (
    <section aria-labelledby="browse-title">
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/">All namespaces</a>
        {(namespace?.split('/') ?? []).map((segment, i, all) => (
          <>
            {' '}
            / <a href={namespaceHref(all.slice(0, i + 1).join('/'))}>{segment}</a>
          </>
        ))}
      </nav>
      <h1 id="browse-title">{title}</h1>
      <div class="filter">
        <label for="prefix">Search by name prefix</label>
        <input
          id="prefix"
          type="search"
          value={prefix}
          aria-describedby="prefix-hint"
          aria-invalid={valid ? 'false' : 'true'}
          onInput={(e: Event) => setPrefix((e.currentTarget as HTMLInputElement).value)}
        />
        <p id="prefix-hint" class={valid ? 'hint' : 'hint error'}>
          {valid ? 'Names that start with this (case-sensitive).' : NAME_RULE}
        </p>
      </div>
      <Messages error={error} />
      {shownNamespaces.length > 0 && (
        <>
          <h2>Namespaces</h2>
          <NamespaceTree parent={namespace} names={shownNamespaces} />
        </>
      )}
      {namespace === undefined && shownNamespaces.length === 0 && !loading && !error && (
        <p>
          No namespaces{shown ? ` starting with “${shown}”` : ''} that you may list. A namespace
          comes into being with its first key: New key, below.
        </p>
      )}
      {namespace !== undefined && (
        <>
          <h2>Keys</h2>
          {shownKeys.length === 0 && !loading ? (
            <p>No keys here{shown ? ` starting with “${shown}”` : ''}.</p>
          ) : (
            <table class="keys">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Type</th>
                  <th scope="col">Version</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {shownKeys.map((row) => (
                  <tr>
                    <td>
                      <a href={keyHref(namespace, row.key)}>{row.key}</a>
                    </td>
                    <td>{row.latest?.type ?? '—'}</td>
                    <td>{row.latest?.version ?? '—'}</td>
                    <td>{row.latest ? new Date(row.latest.created_at).toLocaleString() : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
      {loading && (
        <p class="loading" role="status">
          Loading…
        </p>
      )}
      {cursor && !loading && valid && (
        <button type="button" onClick={() => load(cursor, shown)}>
          Show more
        </button>
      )}
      {namespace !== undefined && <Trash namespace={namespace} />}
      {(namespace === undefined
        ? capabilities.some((c) => c.actions.includes('write'))
        : mayDo(capabilities, 'write', namespace)) && (
        <div>
          <NewKey namespace={namespace} />
        </div>
      )}
    </section>
  );
}
