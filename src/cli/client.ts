/**
 * How the CLI reaches a running server: COFFER_ADDR (default http://127.0.0.1:8750) and COFFER_TOKEN,
 * like Vault's VAULT_ADDR and VAULT_TOKEN. A token is never taken as an argument (it would show in `ps`
 * and shell history). For a server with a private CA, set NODE_EXTRA_CA_CERTS.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface ApiClient {
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
}

export function clientFromEnv(env: NodeJS.ProcessEnv = process.env): ApiClient {
  const addr = (env.COFFER_ADDR ?? 'http://127.0.0.1:8750').replace(/\/+$/, '');
  const token = env.COFFER_TOKEN;
  if (!token)
    throw new CliError(
      'COFFER_TOKEN is not set: export the root token (it is never taken as an argument)',
      2,
    );
  if (!/^https?:\/\/[^/]+$/.test(addr))
    throw new CliError(`COFFER_ADDR must be http(s)://host:port, got "${addr}"`, 2);
  return {
    async call<T>(method: string, path: string, body?: unknown): Promise<T> {
      let res: Response;
      try {
        res = await fetch(addr + path, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      } catch (err) {
        throw new CliError(
          `cannot reach ${addr}: ${(err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message}`,
        );
      }
      const text = await res.text();
      const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      if (res.status >= 400)
        throw new CliError(
          `${method} ${path}: ${res.status} ${String(parsed.code ?? '')}: ${String(parsed.detail ?? text)}`,
        );
      return parsed as T;
    },
  };
}
