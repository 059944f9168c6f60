/**
 * The namespaces as a tree: each child namespace of the page can be opened in place (its first page of
 * keys and child namespaces, read when first opened), and so on down, without leaving the page; its link
 * opens it as a page of its own (paged, with types and versions). The toggles are buttons with
 * aria-expanded, so the tree works from the keyboard and says its state to a screen reader.
 */
import { useState } from 'preact/hooks';
import type { ApiListing } from '../api/response-schemas.js';
import { api, messageOf, pathOf } from './api.js';
import { keyHref, namespaceHref } from './routes.js';

/** Entries shown when a namespace is opened in the tree; the rest are on its own page. */
const OPENED = 50;

function TreeNode({ path, name }: { path: string; name: string }) {
  const [open, setOpen] = useState(false);
  const [listing, setApiListing] = useState<ApiListing | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  async function toggle(): Promise<void> {
    const opening = !open;
    setOpen(opening);
    if (!opening || listing) return;
    try {
      setApiListing(await api<ApiListing>('GET', `${pathOf(path)}?list=true&limit=${OPENED}`));
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return (
    <li>
      <button
        type="button"
        class="twisty"
        aria-expanded={open ? 'true' : 'false'}
        aria-label={`${open ? 'Close' : 'Open'} ${path} in the tree`}
        onClick={toggle}
      >
        {open ? '▾' : '▸'}
      </button>
      <a href={namespaceHref(path)}>{name}/</a>
      {open && error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {open && listing && (
        <ul class="tree">
          {listing.namespaces.map((child) => (
            <TreeNode key={child} path={`${path}/${child}`} name={child} />
          ))}
          {listing.keys.map((key) => (
            <li class="leaf">
              <a href={keyHref(path, key)}>{key}</a>
            </li>
          ))}
          {listing.namespaces.length + listing.keys.length === 0 && (
            <li class="leaf hint">Nothing you may list.</li>
          )}
          {listing.next_cursor && (
            <li class="leaf">
              <a href={namespaceHref(path)}>More in {name}/…</a>
            </li>
          )}
        </ul>
      )}
    </li>
  );
}

/** The child namespaces of `parent` (undefined: the top level), each a tree that opens in place. */
export function NamespaceTree({ parent, names }: { parent: string | undefined; names: string[] }) {
  return (
    <ul class="tree namespaces">
      {names.map((name) => (
        <TreeNode key={name} path={parent === undefined ? name : `${parent}/${name}`} name={name} />
      ))}
    </ul>
  );
}
