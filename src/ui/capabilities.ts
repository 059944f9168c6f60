/**
 * What the session's token may do where, as GET /v1/auth/me lists it (its capabilities), so the console
 * offers only what the session may do: a read-only session is not shown Reveal, Add a version, Delete or
 * New key, only to learn from a 403. The API decides every call all the same (a delegated token's
 * ancestors may allow less). The rule restates the server's (src/auth/patterns.ts), which the console,
 * bundled for the browser, does not import: `*` is every namespace, `ns/*` that namespace and everything
 * beneath it, any other pattern that namespace alone.
 */
import type { ApiSelf } from '../api/response-schemas.js';

export type Capability = ApiSelf['capabilities'][number];

export type Action = 'read' | 'list' | 'write' | 'delete';

function matches(pattern: string, namespace: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('/*')) {
    const root = pattern.slice(0, -2);
    return namespace === root || namespace.startsWith(`${root}/`);
  }
  return namespace === pattern;
}

/** Whether some capability allows `action` in `namespace` (on a value of `type`, or of some type). */
export function mayDo(
  capabilities: readonly Capability[],
  action: Action,
  namespace: string,
  type?: Capability['types'][number],
): boolean {
  return capabilities.some(
    (c) =>
      c.actions.includes(action) &&
      (type === undefined ? c.types.length > 0 : c.types.includes(type)) &&
      matches(c.namespace, namespace),
  );
}
