/** The console's addresses: everything after # (so no path reaches the server's logs). */
import { isKeyName, isNamespace } from './names.js';

export type Route =
  | { readonly page: 'browse'; readonly namespace?: string }
  | { readonly page: 'tokens' | 'roles' | 'webhooks' | 'keyring' | 'audit' | 'seal-report' }
  | { readonly page: 'sign-in-failed'; readonly reason: string }
  | { readonly page: 'key'; readonly namespace: string; readonly key: string };

export const namespaceHref = (namespace: string): string =>
  `#/ns/${namespace.split('/').map(encodeURIComponent).join('/')}`;

export const keyHref = (namespace: string, key: string): string =>
  `#/key/${encodeURIComponent(key)}/in/${namespace.split('/').map(encodeURIComponent).join('/')}`;

/**
 * The route an address names. Every namespace and key taken from it is checked against the API's name
 * rules before anything is asked with it (so `..` or `.` can never reach a request's path, where the
 * browser would resolve it to another endpoint): an address that names none is the top.
 */
export function routeOf(hash: string): Route {
  const path = hash.replace(/^#\/?/, '');
  try {
    const key = /^key\/([^/]+)\/in\/(.+)$/.exec(path);
    if (key) {
      const name = decodeURIComponent(key[1]!);
      const namespace = key[2]!.split('/').map(decodeURIComponent).join('/');
      return isKeyName(name) && isNamespace(namespace)
        ? { page: 'key', key: name, namespace }
        : { page: 'browse' };
    }
    for (const page of ['tokens', 'roles', 'webhooks', 'keyring', 'audit', 'seal-report'] as const)
      if (path === page) return { page };
    const failed = /^sign-in-failed\/(.+)$/.exec(path);
    if (failed) return { page: 'sign-in-failed', reason: decodeURIComponent(failed[1]!) };
    const ns = /^ns\/(.+)$/.exec(path);
    if (ns) {
      const namespace = ns[1]!.split('/').map(decodeURIComponent).join('/');
      return isNamespace(namespace) ? { page: 'browse', namespace } : { page: 'browse' };
    }
  } catch {
    // a malformed address: the top
  }
  return { page: 'browse' };
}
