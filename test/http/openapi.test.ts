import { createConfig, lintFromString } from '@redocly/openapi-core';
import { expect } from 'chai';
import { kvPutSchema, tokenCreateSchema } from '../../src/api/schemas.js';
import { PRIVILEGES } from '../../src/model/policies.js';
import { resolve } from '../support/api-contract.js';
import { auditLines } from '../support/audit-lines.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

interface DocumentedOperation {
  operationId: string;
  security?: unknown[];
  responses: Record<string, unknown>;
  requestBody?: unknown;
  'x-coffer-action': string;
  'x-coffer-privilege'?: string;
}

const DOC_ROLE = {
  rules: [{ namespaces: ['doc'], actions: ['read'], types: ['config'] }],
};
const DOC_LOGIN_ROLE = {
  issuer: 'https://issuer.example.com',
  jwks_url: 'https://issuer.example.com/jwks',
  bound_audiences: ['coffer'],
  role: 'reader',
};

/** A request that reaches each documented operation, by operationId. */
/** A webhook the examples read: a public address (none reached here), sent no namespace the tests write. */
const DOC_WEBHOOK = { url: 'https://93.184.215.14/hook', namespaces: ['doc-webhook-none'] };

const EXAMPLES: Record<string, { path: string; json?: unknown }> = {
  getOpenApiDocument: { path: '/v1/openapi.json' },
  getSelf: { path: '/v1/auth/me' },
  createToken: { path: '/v1/auth/token', json: { role: 'reader' } },
  listTokens: { path: '/v1/auth/tokens' },
  revokeToken: { path: '/v1/auth/token/AAAAAAAAAAAAAAAA' },
  revokeSelf: { path: '/v1/auth/token/revoke-self' },
  renewSelf: { path: '/v1/auth/token/renew' },
  listTopNamespaces: { path: '/v1/kv' },
  listNamespace: { path: '/v1/kv/doc' },
  readKey: { path: '/v1/kv/doc/k' },
  writeKey: { path: '/v1/kv/doc/k', json: { value: 'v', type: 'config' } },
  deleteKey: { path: '/v1/kv/doc/gone' },
  undeleteKey: { path: '/v1/kv/doc/k?undelete=false' },
  setKeyMetadata: { path: '/v1/kv/doc/k', json: { max_versions: 0 } },
  // An open stream never ends: a refused filter reaches the operation and is answered at once.
  streamEvents: { path: '/v1/events?kinds=nothing' },
  listKeyVersions: { path: '/v1/kv/doc/v/versions' },
  getKeyringStatus: { path: '/v1/sys/keyring' },
  getServerVersion: { path: '/v1/sys/version' },
  rotateKeyring: { path: '/v1/sys/keyring/rotate' },
  startRewrap: { path: '/v1/sys/keyring/rewrap' },
  getRewrapStatus: { path: '/v1/sys/keyring/rewrap' },
  retireKeyringVersions: { path: '/v1/sys/keyring/retire' },
  migrateKeyring: { path: '/v1/sys/keyring/migrate', json: { provider: 'local' } },
  searchAuditLog: { path: '/v1/sys/audit' },
  verifyAuditLog: { path: '/v1/sys/audit/verify' },
  getSealReport: { path: '/v1/sys/seal-report' },
  getHealth: { path: '/v1/sys/health' },
  getMetrics: { path: '/v1/sys/metrics' },
  listSnapshots: { path: '/v1/sys/snapshots' },
  getAuditPublicKey: { path: '/v1/sys/audit/public-key' },
  listAuditChains: { path: '/v1/sys/audit/chains' },
  loginJwt: { path: '/v1/auth/login/jwt', json: { role: 'doc', jwt: 'a.b.c' } },
  consoleSignIn: { path: '/v1/console/sign-in', json: { token: 'not-a-token' } },
  consoleSession: { path: '/v1/console/session' },
  consoleSignOut: { path: '/v1/console/sign-out' },
  consoleOidcStart: { path: '/v1/console/oidc/start' },
  consoleOidcCallback: { path: '/v1/console/oidc/callback' },
  loginOidcStart: {
    path: '/v1/auth/login/oidc/start',
    json: {
      role: 'doc',
      redirect_uri: 'http://127.0.0.1:9/oidc/callback',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      state: 'aaaaaaaaaaaaaaaaaaaaaaaaaa',
      nonce: 'bbbbbbbbbbbbbbbbbbbbbbbbbb',
    },
  },
  loginOidcCallback: {
    path: '/v1/auth/login/oidc/callback',
    json: {
      role: 'doc',
      redirect_uri: 'http://127.0.0.1:9/oidc/callback',
      code: 'c',
      state: 'aaaaaaaaaaaaaaaaaaaaaaaaaa',
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
      nonce: 'bbbbbbbbbbbbbbbbbbbbbbbbbb',
    },
  },
  listRoles: { path: '/v1/sys/roles' },
  getRole: { path: '/v1/sys/roles/admin' },
  putRole: { path: '/v1/sys/roles/doc-role', json: DOC_ROLE },
  deleteRole: { path: '/v1/sys/roles/doc-gone' },
  listLoginRoles: { path: '/v1/sys/login-roles' },
  getLoginRole: { path: '/v1/sys/login-roles/doc' },
  putLoginRole: { path: '/v1/sys/login-roles/doc', json: DOC_LOGIN_ROLE },
  deleteLoginRole: { path: '/v1/sys/login-roles/doc-gone' },
  listWebhooks: { path: '/v1/sys/webhooks' },
  getWebhook: { path: '/v1/sys/webhooks/doc' },
  putWebhook: { path: '/v1/sys/webhooks/doc', json: DOC_WEBHOOK },
  deleteWebhook: { path: '/v1/sys/webhooks/doc-gone' },
  testWebhook: { path: '/v1/sys/webhooks/doc/test' },
};

function operationsOf(doc: {
  paths: Record<string, Record<string, DocumentedOperation>>;
}): { method: string; op: DocumentedOperation }[] {
  return Object.values(doc.paths).flatMap((item) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), op })),
  );
}

/** The header names a documented response declares, its `$ref`s followed. */
function declaredHeaders(doc: object, response: unknown): string[] {
  return Object.keys(resolve<{ headers?: object }>(doc, response).headers ?? {});
}

describe('OpenAPI document', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
    await c.put('doc/k', 'v', 'config');
    await c.put('doc/v', 'v', 'config');
    expect(
      (await c.call('PUT', '/v1/sys/login-roles/doc', { json: DOC_LOGIN_ROLE })).status,
    ).to.equal(201);
    expect((await c.call('PUT', '/v1/sys/webhooks/doc', { json: DOC_WEBHOOK })).status).to.equal(
      201,
    );
  });
  after(async () => {
    await c.close();
  });

  it('is served without a token as OpenAPI 3.1', async () => {
    const res = await c.call('GET', '/v1/openapi.json', { token: null });
    expect(res.status).to.equal(200);
    expect(res.body.openapi).to.equal('3.1.0');
  });

  it('names every operation (a unique operationId, for client generators) and says where it is served and under what license', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    const methods = ['get', 'put', 'post', 'delete', 'patch'];
    const operations = Object.values(
      doc.paths as Record<string, Record<string, { operationId?: string }>>,
    ).flatMap((item) => methods.filter((m) => m in item).map((m) => item[m]!));
    expect(operations.length).to.be.greaterThan(15);
    const ids = operations.map((o) => o.operationId);
    expect(
      ids.filter((id) => typeof id !== 'string' || !/^[a-z][A-Za-z]+$/.test(id)),
    ).to.deep.equal([]);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(doc.servers).to.deep.equal([{ url: '/', description: 'this Coffer server' }]);
    expect(doc.info.license).to.have.property('name');
  });

  it("passes Redocly's recommended OpenAPI rules with no error and no warning", async () => {
    const res = await c.call('GET', '/v1/openapi.json', { token: null });
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({
      source: res.text,
      absoluteRef: 'openapi.json',
      config,
    });
    // The console's sign-in through a provider is two browser navigations: their answer is a 303, by
    // design never a 2xx. Every other operation must have one.
    const navigations = ['~1v1~1console~1oidc~1start', '~1v1~1console~1oidc~1callback'];
    expect(
      problems
        .filter(
          (p) =>
            !(
              p.ruleId === 'operation-2xx-response' &&
              navigations.some((n) => p.location[0]?.pointer?.includes(n))
            ),
        )
        .map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location[0]?.pointer})`),
    ).to.deep.equal([]);
  });

  it('lists 429 for every operation that takes a token and for the JWT login, and the 400 the document itself gives for a query', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    for (const [path, item] of Object.entries(
      doc.paths as Record<
        string,
        Record<string, { security?: unknown[]; responses: Record<string, unknown> }>
      >,
    )) {
      for (const [method, op] of Object.entries(item)) {
        const public_ = Array.isArray(op.security) && op.security.length === 0;
        // A login from an address past its failure rate is refused 429 (routes/login.ts).
        const limited =
          !public_ || path.startsWith('/v1/auth/login/') || path === '/v1/console/sign-in';
        expect(Object.keys(op.responses).includes('429'), `${method} ${path}`).to.equal(limited);
      }
    }
    expect((await c.call('GET', '/v1/openapi.json?x=1', { token: null })).status).to.equal(400);
  });

  it('publishes the very schemas the server validates with', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    const put =
      doc.paths['/v1/kv/{namespace}/{key}'].put.requestBody.content['application/json'].schema;
    expect(put).to.deep.equal(JSON.parse(JSON.stringify(kvPutSchema)));
    const create = doc.paths['/v1/auth/token'].post.requestBody.content['application/json'].schema;
    expect(create).to.deep.equal(JSON.parse(JSON.stringify(tokenCreateSchema(c.config.max_ttl))));
  });

  it('tells the answers a path may give apart by a discriminator, `kind`, which every such answer carries', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    const ok = (path: string) =>
      doc.paths[path].get.responses['200'].content['application/json'].schema;
    const ref = (name: string) => `#/components/schemas/${name}`;
    expect(ok('/v1/kv/{namespace}/{key}').discriminator).to.deep.equal({
      propertyName: 'kind',
      mapping: { entry: ref('Entry'), listing: ref('Listing') },
    });
    expect(ok('/v1/kv/{namespace}').discriminator).to.deep.equal({
      propertyName: 'kind',
      mapping: {
        listing: ref('Listing'),
        values: ref('NamespaceValues'),
        trash: ref('TrashListing'),
      },
    });
    for (const name of ['Entry', 'Listing', 'NamespaceValues', 'TrashListing'])
      expect(doc.components.schemas[name].required, name).to.include('kind');
    // The same readKey path gives an entry, or (naming a namespace) a listing; listNamespace, values.
    await c.put('doc/sub/k', 'v', 'config');
    expect((await c.call('GET', '/v1/kv/doc/k')).body.kind).to.equal('entry');
    expect((await c.call('GET', '/v1/kv/doc/sub')).body.kind).to.equal('listing');
    expect((await c.call('GET', '/v1/kv/doc')).body.kind).to.equal('listing');
    expect((await c.call('GET', '/v1/kv/doc?values=true')).body.kind).to.equal('values');
    expect((await c.call('GET', '/v1/kv/doc?trash=true')).body.kind).to.equal('trash');
  });

  it('documents only operations the server serves, and every one of them', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    // Each documented operation is reached at its example's path (EXAMPLES: one for every operationId, the
    // next test holds the two lists equal).
    for (const [template, operations] of Object.entries(
      doc.paths as Record<
        string,
        Record<string, { operationId: string; responses: Record<string, unknown> }>
      >,
    )) {
      for (const [method, operation] of Object.entries(operations)) {
        const example = EXAMPLES[operation.operationId];
        expect(example, `${method} ${template}: an example`).to.not.equal(undefined);
        const res = await c.call(
          method.toUpperCase(),
          example!.path,
          method === 'put'
            ? { json: { value: 'v', type: 'config' } }
            : method === 'post' && template === '/v1/auth/token'
              ? { json: { role: 'reader' } }
              : {},
        );
        expect(res.status, `${method} ${template}`).to.not.be.oneOf(
          [404, 405].filter((s) => !(s === 404 && method === 'delete')),
        );
        expect(Object.keys(operation.responses), `${method} ${template}`).to.include(
          String(res.status),
        );
        // ETag comes with an entry, not with a listing: the same documented 200 of a read.
        for (const name of declaredHeaders(doc, operation.responses[String(res.status)]))
          if (name !== 'ETag')
            expect(res.headers.get(name), `${method} ${template} ${res.status}: ${name}`).to.be.a(
              'string',
            );
      }
    }
  });

  it('declares the headers answers carry, and the server sends each: WWW-Authenticate on 401, Allow on 405, Retry-After on 429 and 503, ETag on a read, the request id and Cache-Control on all', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    const me = doc.paths['/v1/auth/me'].get;
    const unauthorized = await c.call('GET', '/v1/auth/me', { token: null });
    expect(unauthorized.status).to.equal(401);
    expect(unauthorized.headers.get('www-authenticate')).to.match(/^Bearer realm="coffer"/);
    expect(declaredHeaders(doc, me.responses['401'])).to.include.members([
      'WWW-Authenticate',
      'X-Request-Id',
      'Cache-Control',
    ]);
    const wrongMethod = await c.call('DELETE', '/v1/auth/me');
    expect(wrongMethod.status).to.equal(405);
    expect(wrongMethod.headers.get('allow')).to.include('GET');
    expect(declaredHeaders(doc, me.responses['405'])).to.include('Allow');
    expect(declaredHeaders(doc, me.responses['429'])).to.include('Retry-After');
    expect(declaredHeaders(doc, me.responses['503'])).to.include('Retry-After');
    expect((await c.put('doc/etag', 'v')).status).to.be.oneOf([200, 201]);
    const read = await c.call('GET', '/v1/kv/doc/etag');
    expect(read.headers.get('etag')).to.match(/^"\d+"$/);
    expect(
      declaredHeaders(doc, doc.paths['/v1/kv/{namespace}/{key}'].get.responses['200']),
    ).to.include('ETag');
  });

  it('is built from the operations the server enforces: a token without the stated privilege gets 403 naming it, without the body being read, and every request is audited under the stated action', async () => {
    const doc = (await c.call('GET', '/v1/openapi.json', { token: null })).body;
    const writer = await c.token({ role: 'writer', metadata: { name: 'doc-writer' } });
    const operations = operationsOf(doc);
    expect(operations.map((o) => o.op.operationId).sort()).to.deep.equal(
      Object.keys(EXAMPLES).sort(),
    );
    const privileged = operations.filter((o) => o.op['x-coffer-privilege'] !== undefined);
    expect(privileged.length).to.be.greaterThan(8);
    for (const { method, op } of privileged) {
      const privilege = op['x-coffer-privilege']!;
      expect(PRIVILEGES, op.operationId).to.include(privilege);
      expect(Object.keys(op.responses), op.operationId).to.include('403');
      const example = EXAMPLES[op.operationId]!;
      // A body the schema would refuse: the 403 must come before the body is read or validated.
      const res = await c.call(method, example.path, {
        token: writer,
        ...(op.requestBody ? { json: { not: 'valid' } } : {}),
      });
      expect(res.status, op.operationId).to.equal(403);
      expect(res.body.code, op.operationId).to.equal('forbidden');
      expect(res.body.detail, op.operationId).to.include(privilege);
    }

    // Each operation is audited under its action, even when refused before its handler runs.
    const requestIds = new Map<string, string>();
    for (const { method, op } of operations) {
      const example = EXAMPLES[op.operationId]!;
      const res = await c.call(method, `${example.path}?probe=1`, {
        ...(example.json === undefined ? {} : { json: example.json }),
      });
      expect(res.status, op.operationId).to.equal(400);
      requestIds.set(op.operationId, res.headers.get('x-request-id')!);
    }
    const lines = auditLines(c.config.audit.dir!);
    for (const { op } of operations) {
      const entry = lines.find((l) => l.request_id === requestIds.get(op.operationId));
      expect(entry?.action, op.operationId).to.equal(op['x-coffer-action']);
    }
  });
});
