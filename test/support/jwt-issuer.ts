/**
 * A small JWT issuer on loopback, as Kubernetes' service-account issuer or GitHub Actions' OIDC issuer is
 * seen from Coffer: a JWKS endpoint, an OpenID discovery document, and tokens signed with jose. Keys rotate
 * on demand (a new `kid`), the issuer can go down, and it counts the JWKS fetches it answers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

type Alg = 'RS256' | 'ES256' | 'EdDSA' | 'PS256';

interface SigningKey {
  readonly kid: string;
  readonly alg: Alg;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly publicPem: string;
}

async function newKey(alg: Alg, kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk, publicPem: await exportSPKI(publicKey) };
}

export class TestIssuer {
  /** JWKS requests answered (successfully or not) since start, and when the last came (Date.now()). */
  jwksFetches = 0;
  lastJwksFetchAt = 0;
  discoveryFetches = 0;
  private keys: SigningKey[] = [];
  private down = false;
  private rotations = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(alg: Alg = 'RS256'): Promise<TestIssuer> {
    let issuer: TestIssuer | undefined;
    const server = createServer((req, res) => issuer!.answer(req.url ?? '/', res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    issuer = new TestIssuer(server, `http://127.0.0.1:${port}`);
    issuer.keys = [await newKey(alg, 'key-0')];
    return issuer;
  }

  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }

  /** The key that signs now. */
  get current(): SigningKey {
    return this.keys.at(-1)!;
  }

  /** A new signing key with a new kid; the set serves only it unless `keepOld`. */
  async rotate(options: { keepOld?: boolean; alg?: Alg } = {}): Promise<SigningKey> {
    const key = await newKey(options.alg ?? this.current.alg, `key-${++this.rotations}`);
    this.keys = options.keepOld ? [...this.keys, key] : [key];
    return key;
  }

  /** Every JWKS and discovery request fails (connection reset) until `up()`. */
  goDown(): void {
    this.down = true;
  }

  up(): void {
    this.down = false;
  }

  /** A signed JWT: `claims` over iss, iat, exp (+10 min); `key` signs another key's way. */
  async sign(
    claims: JWTPayload,
    options: { key?: SigningKey; kid?: string | null; header?: Record<string, unknown> } = {},
  ): Promise<string> {
    const key = options.key ?? this.current;
    const now = Math.floor(Date.now() / 1000);
    const header = {
      alg: key.alg,
      ...(options.kid === null ? {} : { kid: options.kid ?? key.kid }),
      ...options.header,
    };
    return new SignJWT({ iss: this.url, iat: now, exp: now + 600, ...claims })
      .setProtectedHeader(header as never)
      .sign(key.privateKey);
  }

  /** A projected service-account token's claims (audience `coffer`), as the Kubernetes API server makes them. */
  kubernetesClaims(
    namespace: string,
    serviceAccount: string,
    pod = `${serviceAccount}-7d9f8`,
  ): JWTPayload {
    return {
      aud: ['coffer'],
      sub: `system:serviceaccount:${namespace}:${serviceAccount}`,
      'kubernetes.io': {
        namespace,
        pod: { name: pod, uid: '4d0c6a1e-0b1f-4c0e-9a7e-2f6d3f0e1a11' },
        serviceaccount: { name: serviceAccount, uid: '9c1d2e3f-aaaa-4bbb-8ccc-0d1e2f3a4b5c' },
      },
    };
  }

  /** A GitHub Actions OIDC token's claims for `repository` at `ref`. */
  githubClaims(repository: string, ref: string): JWTPayload {
    return {
      aud: 'coffer',
      sub: `repo:${repository}:ref:${ref}`,
      repository,
      repository_owner: repository.split('/')[0],
      ref,
      ref_type: 'branch',
      workflow: 'deploy',
      event_name: 'push',
      actor: 'octocat',
      run_id: '1234567890',
    };
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private answer(path: string, res: import('node:http').ServerResponse): void {
    if (path === '/jwks') {
      this.jwksFetches++;
      this.lastJwksFetchAt = Date.now();
    }
    if (path === '/.well-known/openid-configuration') this.discoveryFetches++;
    if (this.down) {
      res.socket?.destroy();
      return;
    }
    res.setHeader('content-type', 'application/json');
    if (path === '/jwks') {
      res.end(JSON.stringify({ keys: this.keys.map((k) => k.publicJwk) }));
    } else if (path === '/.well-known/openid-configuration') {
      res.end(
        JSON.stringify({
          issuer: this.url,
          jwks_uri: this.jwksUrl,
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  }
}
