import { isNamespace, isWithin } from '../model/names.js';

/**
 * A namespace pattern as written in a scope or a role rule:
 * `*` matches every namespace, `p/*` matches `p` and every namespace beneath it, anything else matches
 * exactly that namespace. Any other use of `*` is invalid.
 */
export type NamespacePattern =
  | { readonly kind: 'all'; readonly text: '*' }
  | { readonly kind: 'subtree'; readonly text: string; readonly root: string }
  | { readonly kind: 'exact'; readonly text: string; readonly ns: string };

export function parsePattern(text: string): NamespacePattern | null {
  if (text === '*') return { kind: 'all', text };
  if (text.endsWith('/*')) {
    const root = text.slice(0, -2);
    return isNamespace(root) ? { kind: 'subtree', text, root } : null;
  }
  return isNamespace(text) ? { kind: 'exact', text, ns: text } : null;
}

export function patternMatches(pattern: NamespacePattern, ns: string): boolean {
  switch (pattern.kind) {
    case 'all':
      return true;
    case 'subtree':
      return isWithin(ns, pattern.root);
    case 'exact':
      return ns === pattern.ns;
  }
}

/** True when the pattern matches `ns` or at least one namespace beneath it. */
export function patternReachesInto(pattern: NamespacePattern, ns: string): boolean {
  switch (pattern.kind) {
    case 'all':
      return true;
    case 'subtree':
      return isWithin(ns, pattern.root) || isWithin(pattern.root, ns);
    case 'exact':
      return isWithin(pattern.ns, ns);
  }
}

/** True when every namespace `inner` matches, `outer` matches too. */
export function patternCovers(outer: NamespacePattern, inner: NamespacePattern): boolean {
  switch (outer.kind) {
    case 'all':
      return true;
    case 'subtree':
      return (
        inner.kind !== 'all' && isWithin(inner.kind === 'exact' ? inner.ns : inner.root, outer.root)
      );
    case 'exact':
      return inner.kind === 'exact' && inner.ns === outer.ns;
  }
}

/** True when the pattern matches `ns` and every namespace beneath it. */
export function patternCoversSubtree(pattern: NamespacePattern, ns: string): boolean {
  // An exact pattern never covers the namespaces beneath its own; the others match all of a subtree.
  return pattern.kind !== 'exact' && patternMatches(pattern, ns);
}
