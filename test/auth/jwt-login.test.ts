import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { base64url, SignJWT } from 'jose';
import { eventually } from '../support/eventually.js';
import { type ApiResponse, startTestCoffer, type TestCoffer } from '../support/harness.js';
import { TestIssuer } from '../support/jwt-issuer.js';

/** Until `ms` have passed since `issuer`'s key set was last fetched (the refresh and staleness bounds run from it). */
async function pastLastFetch(issuer: TestIssuer, ms: number): Promise<void> {
  await eventually(() => Date.now() > issuer.lastJwksFetchAt + ms, {
    what: `${ms} ms past the last key set fetch`,
  });
}

/** The audit entry of the request that answered `res` (found by its X-Request-Id). */
async function entryOf(c: TestCoffer, res: ApiResponse): Promise<Record<string, unknown>> {
  const id = res.headers.get('x-request-id')!;
  const page = await c.call('GET', `/v1/sys/audit?request_id=${id}`);
  expect(page.status).to.equal(200);
  const entry = page.body.entries.find((e: { kind: string }) => e.kind === 'request');
  expect(entry, `an entry for request ${id}`).to.not.equal(undefined);
  return entry;
}

const login = (c: TestCoffer, role: string, jwt: string) =>
  c.call('POST', '/v1/auth/login/jwt', { token: null, json: { role, jwt } });

/** Every audit file's text, to show a JWT never reaches the log. */
function auditText(c: TestCoffer): string {
  const dir = c.config.audit.dir!;
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl') || f.includes('audit'))
    .map((f) => {
      try {
        return readFileSync(join(dir, f), 'utf8');
      } catch {
        return '';
      }
    })
    .join('\n');
}

describe('JWT login (POST /v1/auth/login/jwt)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let k8s: TestIssuer;
  let github: TestIssuer;

  before(async () => {
    [k8s, github] = await Promise.all([TestIssuer.start('RS256'), TestIssuer.start('ES256')]);
    c = await startTestCoffer({
      env: { COFFER_LOGIN_JWKS_MIN_REFRESH: '1', COFFER_LOGIN_LEEWAY: '30' },
    });
    const put = async (name: string, body: Record<string, unknown>) => {
      const res = await c.call('PUT', `/v1/sys/login-roles/${name}`, { json: body });
      expect(res.status, res.text).to.equal(201);
    };
    // The Kubernetes recipe: a projected service-account token with audience `coffer`.
    await put('payments-pods', {
      issuer: k8s.url,
      jwks_url: k8s.jwksUrl,
      bound_audiences: ['coffer'],
      bound_claims: { 'kubernetes.io.serviceaccount.name': 'api' },
      scopes: [{ namespace: 'apps/{claims.kubernetes.io.namespace}/*', read: true }],
      ttl: 600,
      max_ttl: 1200,
      claims_to_metadata: { 'kubernetes.io.pod.name': 'pod' },
    });
    // The GitHub Actions recipe: discovery, bound to one repository and its branches.
    await put('deploy', {
      issuer: github.url,
      discovery: true,
      bound_audiences: ['coffer'],
      bound_claims: { repository: 'acme/payments', ref: 'refs/heads/*' },
      role: 'config-reader',
      ttl: 300,
    });
    await c.put('apps/payments/db_password', 's3cret-payments');
    await c.put('apps/billing/db_password', 's3cret-billing');
  });

  after(async () => {
    await c?.close();
    await k8s?.close();
    await github?.close();
  });

  it('trades a Kubernetes service-account token for a token scoped to its namespace', async () => {
    const jwt = await k8s.sign(k8s.kubernetesClaims('payments', 'api'));
    const res = await login(c, 'payments-pods', jwt);
    expect(res.status, res.text).to.equal(201);
    expect(res.body.scopes).to.deep.equal([
      { namespace: 'apps/payments/*', read: true, write: false },
    ]);
    expect(res.body.login).to.deep.equal({
      role: 'payments-pods',
      issuer: k8s.url,
      subject: 'system:serviceaccount:payments:api',
    });
    expect(res.body.metadata).to.deep.equal({
      name: 'login:payments-pods:system:serviceaccount:payments:api',
      pod: 'api-7d9f8',
    });
    expect(res.body.expires_in).to.equal(600);
    const token = res.body.token as string;
    const own = await c.call('GET', '/v1/kv/apps/payments/db_password', { token });
    expect(own.status).to.equal(200);
    expect(own.body.value).to.equal('s3cret-payments');
    expect((await c.call('GET', '/v1/kv/apps/billing/db_password', { token })).status).to.equal(
      403,
    );
    // Listed and revocable like any token.
    const listed = (await c.call('GET', '/v1/auth/tokens')).body.tokens.find(
      (t: { id: string }) => t.id === res.body.id,
    );
    expect(listed.login.subject).to.equal('system:serviceaccount:payments:api');
    // The login's audit entry names the login role, issuer and subject — never the JWT.
    const entry = await entryOf(c, res);
    expect(entry).to.include({
      action: 'login.jwt',
      login_role: 'payments-pods',
      issuer: k8s.url,
      subject: 'system:serviceaccount:payments:api',
      subject_token_id: res.body.id,
    });
    expect(auditText(c)).to.not.include(jwt.split('.')[2]);
    expect(auditText(c)).to.not.include(token);
  });

  it('finds logins by login role, issuer and subject in GET /v1/sys/audit', async () => {
    const jwt = await k8s.sign(k8s.kubernetesClaims('payments', 'api', 'api-search'));
    expect((await login(c, 'payments-pods', jwt)).status).to.equal(201);
    const bySubject = await c.call(
      'GET',
      `/v1/sys/audit?subject=${encodeURIComponent('system:serviceaccount:payments:api')}&action=login.jwt`,
    );
    expect(bySubject.body.entries.length).to.be.greaterThan(0);
    for (const e of bySubject.body.entries)
      expect(e.subject).to.equal('system:serviceaccount:payments:api');
    const byRole = await c.call('GET', '/v1/sys/audit?login_role=deploy');
    for (const e of byRole.body.entries) expect(e.login_role).to.equal('deploy');
    const byIssuer = await c.call(
      'GET',
      `/v1/sys/audit?issuer=${encodeURIComponent(k8s.url)}&action=login.jwt`,
    );
    expect(byIssuer.body.entries.length).to.be.greaterThan(0);
    const bad = await c.call('GET', '/v1/sys/audit?login_role=Not%20A%20Name');
    expect(bad.status).to.equal(400);
  });

  it('trades a GitHub Actions token (discovery) bound to one repository and its branches', async () => {
    const ok = await login(
      c,
      'deploy',
      await github.sign(github.githubClaims('acme/payments', 'refs/heads/main')),
    );
    expect(ok.status, ok.text).to.equal(201);
    expect(ok.body.role).to.equal('config-reader');
    expect(github.discoveryFetches).to.be.greaterThan(0);
    const fork = await login(
      c,
      'deploy',
      await github.sign(github.githubClaims('evil/payments', 'refs/heads/main')),
    );
    expect(fork.status).to.equal(401);
    expect(await entryOf(c, fork)).to.include({ reason: 'claim_mismatch', claim: 'repository' });
    const tag = await login(
      c,
      'deploy',
      await github.sign(github.githubClaims('acme/payments', 'refs/tags/v1')),
    );
    expect(tag.status).to.equal(401);
    expect(await entryOf(c, tag)).to.include({ reason: 'claim_mismatch', claim: 'ref' });
  });

  describe('refuses, each with the same 401 and its own reason in the audit log', () => {
    const refused = async (
      role: string,
      jwt: string,
      reason: string,
    ): Promise<Record<string, unknown>> => {
      const res = await login(c, role, jwt);
      expect(res.status, res.text).to.equal(401);
      expect(res.body.code).to.equal('unauthorized');
      expect(res.body.detail).to.equal(
        'the JWT was not accepted for this login role (the audit log entry of this request says why)',
      );
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
      const entry = await entryOf(c, res);
      expect(entry.reason).to.equal(reason);
      expect(entry).to.not.have.property('subject_token_id');
      return entry;
    };
    const claims = () => k8s.kubernetesClaims('payments', 'api');

    it('alg: none', async () => {
      const unsigned = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(
        JSON.stringify({
          iss: k8s.url,
          ...claims(),
          exp: Math.floor(Date.now() / 1000) + 600,
        }),
      )}.`;
      await refused('payments-pods', unsigned, 'alg_not_allowed');
    });

    it("an HS256 token signed with the issuer's public key", async () => {
      const now = Math.floor(Date.now() / 1000);
      const forged = await new SignJWT({ iss: k8s.url, iat: now, exp: now + 600, ...claims() })
        .setProtectedHeader({ alg: 'HS256', kid: k8s.current.kid })
        .sign(new TextEncoder().encode(k8s.current.publicPem));
      await refused('payments-pods', forged, 'alg_not_allowed');
    });

    it('a token signed by a key the issuer does not hold', async () => {
      const stranger = await TestIssuer.start('RS256');
      try {
        const jwt = await stranger.sign({ ...claims(), iss: k8s.url }, { kid: k8s.current.kid });
        await refused('payments-pods', jwt, 'bad_signature');
      } finally {
        await stranger.close();
      }
    });

    it('expired (past the leeway), and not yet valid', async () => {
      const now = Math.floor(Date.now() / 1000);
      await refused(
        'payments-pods',
        await k8s.sign({ ...claims(), iat: now - 700, exp: now - 60 }),
        'expired',
      );
      // Within the 30 s leeway: still accepted.
      const late = await login(
        c,
        'payments-pods',
        await k8s.sign({ ...claims(), iat: now - 700, exp: now - 10 }),
      );
      expect(late.status).to.equal(201);
      await refused(
        'payments-pods',
        await k8s.sign({ ...claims(), nbf: now + 120 }),
        'not_yet_valid',
      );
      await refused(
        'payments-pods',
        await k8s.sign({ ...claims(), iat: now + 120 }),
        'issued_in_future',
      );
    });

    it('a wrong audience, a wrong issuer, a missing exp', async () => {
      await refused(
        'payments-pods',
        await k8s.sign({ ...claims(), aud: ['kubernetes'] }),
        'wrong_audience',
      );
      await refused(
        'payments-pods',
        await k8s.sign({ ...claims(), iss: 'https://kubernetes.default.svc' }),
        'wrong_issuer',
      );
      const now = Math.floor(Date.now() / 1000);
      const noExp = await new SignJWT({ iss: k8s.url, iat: now, ...claims() })
        .setProtectedHeader({ alg: 'RS256', kid: k8s.current.kid })
        .sign(k8s.current.privateKey);
      const entry = await refused('payments-pods', noExp, 'claim_missing');
      expect(entry.claim).to.equal('exp');
    });

    it('a bound claim that does not match, and an unknown login role (same answer)', async () => {
      await refused(
        'payments-pods',
        await k8s.sign(k8s.kubernetesClaims('payments', 'worker')),
        'claim_mismatch',
      );
      const entry = await refused('no-such-role', await k8s.sign(claims()), 'unknown_role');
      expect(entry.login_role).to.equal('no-such-role');
    });

    it('a claim that would widen a templated scope: *, a slash, .., empty', async () => {
      for (const namespace of ['*', 'payments/admin', '..', '', '.'])
        await refused(
          'payments-pods',
          await k8s.sign({
            ...claims(),
            'kubernetes.io': { namespace, serviceaccount: { name: 'api' } },
          }),
          'claim_widens_scope',
        );
    });

    it('a number or a boolean put in a templated scope (only text is a claim name there)', async () => {
      for (const namespace of [7, true, 0])
        await refused(
          'payments-pods',
          await k8s.sign({
            ...claims(),
            'kubernetes.io': { namespace, serviceaccount: { name: 'api' } },
          }),
          'claim_widens_scope',
        );
    });

    it('a flat claim whose name reads as the nested path, with another value: refused, never taking over the issuer’s', async () => {
      const entry = await refused(
        'payments-pods',
        await k8s.sign({
          ...claims(),
          'kubernetes.io.namespace': 'billing',
        }),
        'claim_ambiguous',
      );
      expect(entry.claim).to.equal('kubernetes.io.namespace');
      // The same value both ways is no disagreement.
      const same = await login(
        c,
        'payments-pods',
        await k8s.sign({ ...claims(), 'kubernetes.io.namespace': 'payments' }),
      );
      expect(same.status).to.equal(201);
    });

    it('a token over the size limit, before it is parsed', async () => {
      const huge = `${'a'.repeat(20_000)}.b.c`;
      await refused('payments-pods', huge, 'too_large');
      await refused('payments-pods', 'not-a-jwt', 'malformed');
    });

    it('an unknown kid, fetching the key set again at most once per interval', async () => {
      const before = k8s.jwksFetches;
      const ghost = await k8s.rotate({ keepOld: true });
      // The issuer serves the new key only after Coffer last fetched; here it serves it, but the bound
      // limits fetches: many unknown kids within the interval cost one fetch.
      await pastLastFetch(k8s, 1100);
      const made = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          k8s.sign(claims(), { key: ghost, kid: `made-up-${i}` }),
        ),
      );
      for (const jwt of made) await refused('payments-pods', jwt, 'unknown_kid');
      expect(k8s.jwksFetches - before).to.equal(1);
    });
  });

  it('accepts a key rotation at the issuer (new kid) without a restart', async () => {
    await pastLastFetch(k8s, 1100); // past the refresh interval of the last test's fetch
    const rotated = await k8s.rotate();
    const res = await login(
      c,
      'payments-pods',
      await k8s.sign(k8s.kubernetesClaims('payments', 'api'), { key: rotated }),
    );
    expect(res.status, res.text).to.equal(201);
  });

  it('keeps logging in with the cached key set while the issuer is down', async () => {
    const jwt = await k8s.sign(k8s.kubernetesClaims('payments', 'api'));
    expect((await login(c, 'payments-pods', jwt)).status).to.equal(201);
    k8s.goDown();
    try {
      const again = await login(
        c,
        'payments-pods',
        await k8s.sign(k8s.kubernetesClaims('payments', 'api')),
      );
      expect(again.status, again.text).to.equal(201);
    } finally {
      k8s.up();
    }
  });

  it('refuses the tokens of a login role deleted while they live', async () => {
    await c.call('PUT', '/v1/sys/login-roles/short-lived', {
      json: {
        issuer: k8s.url,
        jwks_url: k8s.jwksUrl,
        bound_audiences: ['coffer'],
        role: 'reader',
      },
    });
    const res = await login(
      c,
      'short-lived',
      await k8s.sign(k8s.kubernetesClaims('payments', 'api')),
    );
    expect(res.status).to.equal(201);
    const token = res.body.token as string;
    expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(200);
    expect((await c.call('DELETE', '/v1/sys/login-roles/short-lived')).status).to.equal(204);
    expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);
    expect((await c.call('GET', '/v1/kv/apps/payments/db_password', { token })).status).to.equal(
      401,
    );
    const gone = await login(
      c,
      'short-lived',
      await k8s.sign(k8s.kubernetesClaims('payments', 'api')),
    );
    expect(gone.status).to.equal(401);
    // Made again under the same name: a new login role; the old one's tokens stay refused.
    await c.call('PUT', '/v1/sys/login-roles/short-lived', {
      json: { issuer: k8s.url, jwks_url: k8s.jwksUrl, bound_audiences: ['coffer'], role: 'reader' },
    });
    expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);
  });

  it('caps renewals of a login token at the login role max_ttl', async () => {
    const res = await login(
      c,
      'payments-pods',
      await k8s.sign(k8s.kubernetesClaims('payments', 'api')),
    );
    const renewed = await c.call('POST', '/v1/auth/token/renew', { token: res.body.token });
    expect(renewed.status).to.equal(200);
    const created = Date.parse(res.body.created_at);
    expect(Date.parse(renewed.body.expires_at) - created).to.be.at.most(1200 * 1000);
  });
});

describe('JWT login with a stale key set', function () {
  this.timeout(30_000);
  it('refuses once the last key set fetched is older than jwks max stale while the issuer is down', async () => {
    const issuer = await TestIssuer.start('EdDSA');
    const c = await startTestCoffer({
      env: {
        COFFER_LOGIN_JWKS_MAX_STALE: '1',
        COFFER_LOGIN_JWKS_REFRESH: '1',
        COFFER_LOGIN_JWKS_MIN_REFRESH: '0',
      },
    });
    try {
      await c.call('PUT', '/v1/sys/login-roles/edge', {
        json: {
          issuer: issuer.url,
          jwks_url: issuer.jwksUrl,
          bound_audiences: ['coffer'],
          role: 'reader',
        },
      });
      const claims = { sub: 'edge-1', aud: 'coffer' };
      expect((await login(c, 'edge', await issuer.sign(claims))).status).to.equal(201);
      issuer.goDown();
      await pastLastFetch(issuer, 1200);
      const res = await login(c, 'edge', await issuer.sign(claims));
      expect(res.status).to.equal(401);
      expect((await entryOf(c, res)).reason).to.equal('issuer_unreachable');
      issuer.up();
      expect((await login(c, 'edge', await issuer.sign(claims))).status).to.equal(201);
    } finally {
      await c.close();
      await issuer.close();
    }
  });
});

describe('login roles (/v1/sys/login-roles)', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let issuer: TestIssuer;
  before(async () => {
    issuer = await TestIssuer.start();
    c = await startTestCoffer();
  });
  after(async () => {
    await c?.close();
    await issuer?.close();
  });

  it('are created, read, listed, replaced and deleted by root only', async () => {
    const body = {
      issuer: issuer.url,
      public_keys: [issuer.current.publicPem],
      bound_audiences: ['coffer'],
      bound_subject: 'svc-*',
      role: 'reader',
    };
    const created = await c.call('PUT', '/v1/sys/login-roles/pem', { json: body });
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.include({ issuer: issuer.url, role: 'reader', bound_subject: 'svc-*' });
    expect(created.body.ttl).to.equal(c.config.default_ttl);
    expect(created.body.max_ttl).to.equal(c.config.max_ttl);
    expect((await c.call('PUT', '/v1/sys/login-roles/pem', { json: body })).status).to.equal(200);
    const list = await c.call('GET', '/v1/sys/login-roles');
    expect(list.body.login_roles.map((l: { name: string }) => l.name)).to.deep.equal(['pem']);
    // public_keys work (PEM, no kid), and bound_subject is a glob.
    const ok = await login(c, 'pem', await issuer.sign({ sub: 'svc-billing', aud: 'coffer' }));
    expect(ok.status, ok.text).to.equal(201);
    const other = await login(c, 'pem', await issuer.sign({ sub: 'human-1', aud: 'coffer' }));
    expect(other.status).to.equal(401);
    expect((await entryOf(c, other)).reason).to.equal('subject_mismatch');

    const admin = await c.token({ role: 'admin' });
    for (const [method, path] of [
      ['GET', '/v1/sys/login-roles'],
      ['GET', '/v1/sys/login-roles/pem'],
      ['DELETE', '/v1/sys/login-roles/pem'],
    ] as const)
      expect((await c.call(method, path, { token: admin })).status).to.equal(403);
    expect((await c.call('DELETE', '/v1/sys/login-roles/pem')).status).to.equal(204);
    expect((await c.call('GET', '/v1/sys/login-roles/pem')).status).to.equal(404);
    expect((await c.call('DELETE', '/v1/sys/login-roles/pem')).status).to.equal(404);
  });

  it('refuses what cannot work or would be unsafe, naming each field', async () => {
    const base = { issuer: issuer.url, bound_audiences: ['coffer'], role: 'reader' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base }, ''],
      [{ ...base, jwks_url: issuer.jwksUrl, discovery: true }, ''],
      [{ ...base, jwks_url: 'http://issuer.example.com/jwks' }, '/jwks_url'],
      [{ ...base, jwks_url: issuer.jwksUrl, role: 'root' }, '/role'],
      [{ ...base, jwks_url: issuer.jwksUrl, role: 'nobody' }, '/role'],
      [{ ...base, jwks_url: issuer.jwksUrl, public_keys: undefined, role: undefined }, ''],
      [
        {
          ...base,
          role: undefined,
          jwks_url: issuer.jwksUrl,
          scopes: [{ namespace: 'apps/{claim.sub}', read: true }],
        },
        '/scopes/0/namespace',
      ],
      [
        {
          ...base,
          role: undefined,
          jwks_url: issuer.jwksUrl,
          scopes: [{ namespace: 'apps/x{claims.sub}*', read: true }],
        },
        '/scopes/0/namespace',
      ],
      [
        { ...base, public_keys: ['-----BEGIN PRIVATE KEY-----\nMC4=\n-----END PRIVATE KEY-----'] },
        '/public_keys/0',
      ],
      [{ ...base, public_keys: [JSON.stringify({ kty: 'oct', k: 'c2VjcmV0' })] }, '/public_keys/0'],
      [{ ...base, jwks_url: issuer.jwksUrl, ttl: 600, max_ttl: 60 }, '/ttl'],
      [
        { ...base, jwks_url: issuer.jwksUrl, claims_to_metadata: { sub: '9bad' } },
        '/claims_to_metadata/sub',
      ],
    ];
    for (const [json, field] of cases) {
      const res = await c.call('PUT', '/v1/sys/login-roles/bad', { json });
      expect(res.status, JSON.stringify(json)).to.equal(400);
      expect(
        res.body.errors.map((e: { field: string }) => e.field),
        JSON.stringify(json),
      ).to.include(field);
    }
    expect((await c.call('GET', '/v1/sys/login-roles/bad')).status).to.equal(404);
    expect((await c.call('PUT', '/v1/sys/login-roles/Bad%20Name', { json: base })).status).to.equal(
      400,
    );
  });
});

describe('JWT login: a flood of refused logins from one address', function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let issuer: TestIssuer;

  before(async () => {
    issuer = await TestIssuer.start('RS256');
    c = await startTestCoffer({
      env: { COFFER_AUTH_FLOOD_BURST: '3', COFFER_AUTH_FLOOD_RATE: '0.25' },
    });
    const res = await c.call('PUT', '/v1/sys/login-roles/pods', {
      json: {
        issuer: issuer.url,
        jwks_url: issuer.jwksUrl,
        bound_audiences: ['coffer'],
        role: 'reader',
      },
    });
    expect(res.status, res.text).to.equal(201);
  });
  after(async () => {
    await c?.close();
    await issuer?.close();
  });

  it('is answered 429 with Retry-After past the address’s rate, good JWTs too, without looking at them; then logins work again', async () => {
    const good = await issuer.sign(issuer.kubernetesClaims('payments', 'api'));
    const bad = await issuer.sign({ ...issuer.kubernetesClaims('payments', 'api'), aud: 'other' });
    // Within the burst: each refusal its own 401.
    for (let i = 0; i < 3; i++) expect((await login(c, 'pods', bad)).status).to.equal(401);
    // Past it (the rate refills one every 4 s, so on a slow machine one more may be looked at): 429.
    let more = 0;
    while ((await login(c, 'pods', bad)).status === 401) expect(++more).to.be.below(3);
    const held = Date.now();
    const refused = await login(c, 'pods', good);
    expect(refused.status).to.equal(429);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 4);
    expect(Date.now() - held).to.be.at.least(900); // held back in the tarpit
    // Not even parsed: a body that is not JSON is refused the same way, before the 400 it would get.
    const junk = await c.call('POST', '/v1/auth/login/jwt', { token: null, body: 'not json' });
    expect(junk.status).to.equal(429);
    // Once the rate allows one more failure (one every 4 s), the address's logins are looked at again.
    await new Promise((r) => setTimeout(r, Number(refused.headers.get('retry-after')) * 1000));
    expect((await login(c, 'pods', good)).status).to.equal(201);
  });
});
