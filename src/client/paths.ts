/** The paths and queries of the API's calls. */

/** 1 to 16 segments; each is sent as it is, encoded. */
export function namespacePath(namespace: string): string {
  if (namespace === '' || namespace.startsWith('/') || namespace.endsWith('/'))
    throw new TypeError(`"${namespace}" is not a namespace (segments separated by /)`);
  return namespace.split('/').map(encodeURIComponent).join('/');
}

export const rolePath = (kind: 'roles' | 'login-roles', name: string): string =>
  `/v1/sys/${kind}/${encodeURIComponent(name)}`;

export const webhookPath = (name: string): string => `/v1/sys/webhooks/${encodeURIComponent(name)}`;

export const keyPath = (namespace: string, key: string): string =>
  `/v1/kv/${namespacePath(namespace)}/${encodeURIComponent(key)}`;

export function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
