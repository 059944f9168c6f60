/** The console's addresses: everything after # (so no path reaches the server's logs). */

export type Route =
  | { readonly page: 'browse'; readonly namespace?: string }
  | { readonly page: 'tokens' | 'roles' | 'keyring' | 'audit' | 'seal-report' }
  | { readonly page: 'sign-in-failed'; readonly reason: string }
  | { readonly page: 'key'; readonly namespace: string; readonly key: string };

export const namespaceHref = (namespace: string): string =>
  `#/ns/${namespace.split('/').map(encodeURIComponent).join('/')}`;

export const keyHref = (namespace: string, key: string): string =>
  `#/key/${encodeURIComponent(key)}/in/${namespace.split('/').map(encodeURIComponent).join('/')}`;

export function routeOf(hash: string): Route {
  const path = hash.replace(/^#\/?/, '');
  try {
    const key = /^key\/([^/]+)\/in\/(.+)$/.exec(path);
    if (key)
      return {
        page: 'key',
        key: decodeURIComponent(key[1]!),
        namespace: key[2]!.split('/').map(decodeURIComponent).join('/'),
      };
    for (const page of ['tokens', 'roles', 'keyring', 'audit', 'seal-report'] as const)
      if (path === page) return { page };
    const failed = /^sign-in-failed\/(.+)$/.exec(path);
    if (failed) return { page: 'sign-in-failed', reason: decodeURIComponent(failed[1]!) };
    const ns = /^ns\/(.+)$/.exec(path);
    if (ns)
      return { page: 'browse', namespace: ns[1]!.split('/').map(decodeURIComponent).join('/') };
  } catch {
    // a malformed address: the top
  }
  return { page: 'browse' };
}
