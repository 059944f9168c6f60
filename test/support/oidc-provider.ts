/**
 * A real OpenID Provider on loopback for the people sign-in tests: `oidc-provider` (a certified OpenID
 * Provider implementation) with one client registered as a native app (so any loopback port may be the
 * redirect, RFC 8252 §7.3), PKCE required, and accounts whose `groups` claim the test sets. Its development
 * sign-in pages stand in for the company's: `signIn` plays the person's browser through them (any password).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import type { TestCoffer } from './harness.js';

export interface OidcAccount {
  readonly groups: readonly string[];
  readonly email?: string;
}

export class TestOidcProvider {
  /** Token endpoint requests answered, to show a code is traded once. */
  tokenRequests = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly clientId: string,
    readonly clientSecret: string,
    private readonly accounts: Map<string, OidcAccount>,
  ) {}

  static async start(
    options: { readonly clientSecret?: string; readonly clientId?: string } = {},
  ): Promise<TestOidcProvider> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const url = `http://127.0.0.1:${port}`;
    const clientId = options.clientId ?? 'coffer-cli';
    const clientSecret = options.clientSecret ?? `secret-${crypto.randomUUID()}`;
    const accounts = new Map<string, OidcAccount>();
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const provider = new Provider(url, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          application_type: 'native',
          redirect_uris: [
            'http://127.0.0.1/callback',
            'http://127.0.0.1/oidc/callback',
            'http://127.0.0.1/v1/console/oidc/callback',
          ],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      pkce: { required: () => true },
      claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
      scopes: ['openid', 'email', 'groups'],
      // Scope claims in the ID token, as Keycloak, Dex and Okta put groups there.
      conformIdTokenClaims: false,
      jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'provider-1', alg: 'RS256' }] },
      cookies: { keys: [crypto.randomUUID()] },
      features: { devInteractions: { enabled: true } },
      ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
      async findAccount(_ctx, sub) {
        const account = accounts.get(sub);
        if (!account) return undefined;
        return {
          accountId: sub,
          claims: async () => ({
            sub,
            email: account.email ?? `${sub}@example.test`,
            groups: [...account.groups],
          }),
        };
      },
    });
    const provided = new TestOidcProvider(server, url, clientId, clientSecret, accounts);
    const handle = provider.callback();
    server.on('request', (req, res) => {
      if (req.url?.startsWith('/token')) provided.tokenRequests += 1;
      handle(req, res);
    });
    return provided;
  }

  /** A person who can sign in (any password), with these groups. */
  addAccount(sub: string, account: OidcAccount): void {
    this.accounts.set(sub, account);
  }

  /**
   * Plays the person's browser from `authUrl`: signs in as `sub` on the provider's pages, consents, and
   * follows the provider's redirect back to the caller's address. Answers that last answer's status and
   * text (what `coffer login` shows the person), and where it went.
   */
  async signIn(
    authUrl: string,
    sub: string,
    options: { readonly follow?: boolean } = {},
  ): Promise<{ status: number; text: string; callbackUrl: string }> {
    const cookies = new Map<string, string>();
    let url = authUrl;
    let init: RequestInit = {};
    for (let step = 0; step < 20; step++) {
      const target = new URL(url);
      const toProvider = target.origin === this.url;
      // The redirect back: followed as a browser would, or only told (no one listens there).
      if (!toProvider && options.follow === false) return { status: 0, text: '', callbackUrl: url };
      const headers = new Headers(init.headers);
      if (toProvider && cookies.size > 0)
        headers.set('cookie', [...cookies].map(([n, v]) => `${n}=${v}`).join('; '));
      const res = await fetch(url, { ...init, headers, redirect: 'manual' });
      if (toProvider)
        for (const line of res.headers.getSetCookie()) {
          const [pair] = line.split(';');
          const at = pair!.indexOf('=');
          cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
        }
      const location = res.headers.get('location');
      if (!toProvider) return { status: res.status, text: await res.text(), callbackUrl: url };
      if (location) {
        url = new URL(location, url).href;
        init = {};
        continue;
      }
      const page = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      const prompt = /name="prompt" value="([^"]+)"/.exec(page)?.[1];
      if (!action || !prompt)
        throw new Error(
          `the provider answered ${res.status} without a form: ${page.slice(0, 300)}`,
        );
      url = new URL(action.replaceAll('&amp;', '&'), url).href;
      const form = new URLSearchParams({ prompt });
      if (prompt === 'login') {
        form.set('login', sub);
        form.set('password', 'any');
      }
      init = {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      };
    }
    throw new Error('the sign-in did not come back within 20 steps');
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * What the people tests sign in through: the role `payments-reader` (read and list under payments/), and a
 * login role `name` for the provider's client whose groups give it (payments-team) or admin (coffer-admins).
 */
export async function putPeopleLoginRole(
  c: TestCoffer,
  idp: TestOidcProvider,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const role = await c.call('PUT', '/v1/sys/roles/payments-reader', {
    json: {
      rules: [
        { namespaces: ['payments/*'], actions: ['read', 'list'], types: ['config', 'secret'] },
      ],
    },
  });
  expect(role.status, role.text).to.be.oneOf([200, 201]);
  const put = await c.call('PUT', `/v1/sys/login-roles/${name}`, {
    json: {
      issuer: idp.url,
      discovery: true,
      bound_audiences: [idp.clientId],
      group_roles: { 'payments-team': 'payments-reader', 'coffer-admins': 'admin' },
      oidc: {
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        scopes: ['openid', 'email', 'groups'],
      },
      ttl: 3600,
      ...extra,
    },
  });
  expect(put.status, put.text).to.equal(201);
}
