import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { type Reply, send } from '../support/http-client.js';
import { dropTestSchemas, requirePostgres, testSchema } from '../support/postgres.js';
import { type CofferProcess, runCoffer, serveSettings, startProcess } from '../support/process.js';
import { pgEnv, secondServer } from '../support/shared-servers.js';

/** Where requests go: a process's URL (workers share it) or several servers, taken in turn. */
type Target = { readonly urls: readonly string[]; readonly root: string };

const idOf = (token: string): string => token.slice(4, 20);

/**
 * The outside tester's race: parent P (admin, create_tokens) makes children as fast as it can, each on a
 * new connection, while root revokes P. Resolves to every child value P was given.
 */
async function raceRevocation(
  target: Target,
  rounds = 60,
): Promise<{ parent: string; children: string[] }> {
  const { urls, root } = target;
  const parent = (await send(urls[0]!, 'POST', '/v1/auth/token', root, { role: 'admin' })).body
    .token as string;
  const children: string[] = [];
  let revoked = false;
  const makers = Array.from({ length: 4 }, async (_, m) => {
    for (let i = 0; i < rounds && !(revoked && i > 5); i++) {
      const url = urls[(i + m) % urls.length]!;
      const made: Reply = await send(url, 'POST', '/v1/auth/token', parent, { role: 'admin' });
      if (made.status === 201) children.push(made.body.token as string);
      else if (revoked) return;
    }
  });
  // The revocation lands while the creations go on: after the first few (on a loaded machine each takes a
  // while: argon2 hashes every new token).
  await eventually(async () => children.length >= 3, { what: 'children made', timeout: 30_000 });
  const revoke = await send(urls.at(-1)!, 'DELETE', `/v1/auth/token/${idOf(parent)}`, root);
  expect(revoke.status).to.equal(204);
  revoked = true;
  await Promise.all(makers);
  return { parent, children };
}

/** No child of a revoked parent can be used, on any server, nor listed as active; a second revoke sweeps. */
async function expectAllRevoked(
  target: Target,
  result: { parent: string; children: string[] },
): Promise<void> {
  const { urls, root } = target;
  expect(result.children.length, 'children made before the revocation').to.be.greaterThan(0);
  for (const child of result.children)
    for (const url of urls) {
      const me = await send(url, 'GET', '/v1/auth/me', child);
      expect(me.status, `child ${idOf(child)} on ${url}`).to.equal(401);
      const more = await send(url, 'POST', '/v1/auth/token', child, { role: 'admin' });
      expect(more.status, `child ${idOf(child)} creating`).to.equal(401);
    }
  const listed = (await send(urls[0]!, 'GET', '/v1/auth/tokens?all=true', root)).body.tokens as {
    id: string;
    status: string;
    parent?: string;
  }[];
  const mine = new Set(result.children.map(idOf));
  expect(
    listed.filter((t) => mine.has(t.id) && t.status === 'active').map((t) => t.id),
  ).to.deep.equal([]);
  // Revoking the parent again sweeps whatever is left live below it (204 either way).
  expect(
    (await send(urls[0]!, 'DELETE', `/v1/auth/token/${idOf(result.parent)}`, root)).status,
  ).to.equal(204);
}

describe('delegated tokens: a revoked parent takes its children with it, whatever the interleaving', function () {
  this.timeout(180_000);

  describe('on LMDB, two workers', () => {
    let p: CofferProcess;
    let target: Target;
    let env: Record<string, string>;
    before(async () => {
      const settings = serveSettings(2);
      env = settings.env;
      const { root } = settings;
      p = await startProcess(env);
      target = { urls: [p.url], root };
      // Enough tokens that listing them takes a while: the window the outside tester found widens.
      await Promise.all(
        Array.from({ length: 160 }, () =>
          send(p.url, 'POST', '/v1/auth/token', root, { role: 'reader' }),
        ),
      );
    });
    after(async () => {
      if (p.child.exitCode === null) await p.stop();
    });

    it('creations racing one revocation, five times: no child usable or listed active afterwards; every revocation audited', async () => {
      for (let round = 0; round < 5; round++)
        await expectAllRevoked(target, await raceRevocation(target));
      await p.stop();
      // Every revocation in the store — the sweeps' too — is named by its own token.revoke entry.
      const verify = await runCoffer(['audit', 'verify'], env);
      expect(verify.code, verify.stdout).to.equal(0);
      expect(
        auditLines(`${env.COFFER_DATA_DIR}/audit`).some((l) => l.with_parent !== undefined),
      ).to.equal(true);
    });
  });

  describe('on PostgreSQL, two servers', () => {
    let a: TestCoffer;
    let b: TestCoffer;
    let target: Target;
    before(async function () {
      await requirePostgres(this);
      const schema = testSchema();
      a = await startTestCoffer({ dataDir: tempDir(), env: pgEnv(schema) });
      b = await secondServer(a, schema);
      target = { urls: [a.url, b.url], root: a.rootToken };
      await Promise.all(Array.from({ length: 160 }, () => a.token({ role: 'reader' })));
    });
    after(async () => {
      await b?.close();
      await a?.close();
      await dropTestSchemas();
    });

    it('creations on both servers racing one revocation, six times: no child usable on either', async () => {
      for (let round = 0; round < 3; round++)
        await expectAllRevoked(target, await raceRevocation(target));
    });
  });

  describe("children hold at most their ancestors' rights as they stand", () => {
    let c: TestCoffer;
    before(async () => {
      c = await startTestCoffer({ dataDir: tempDir() });
      expect((await c.put('payments/prod/db', 's3cret')).status).to.equal(201);
    });
    after(async () => {
      await c.close();
    });

    const role = (name: string, namespaces: string[], privileges: string[] = ['create_tokens']) =>
      c.call('PUT', `/v1/sys/roles/${name}`, {
        json: {
          rules: [{ namespaces, actions: ['read', 'list'], types: ['config', 'secret'] }],
          privileges,
        },
      });

    /** A token of a new runtime role `name` (payments/*), and a child it made with a read scope there. */
    const parentAndChild = async (name: string) => {
      expect((await role(name, ['payments/*'])).status).to.be.oneOf([200, 201]);
      const parent = await c.token({ role: name });
      const child = (
        await c.call('POST', '/v1/auth/token', {
          token: parent,
          json: { scopes: [{ namespace: 'payments/*', read: true }] },
        })
      ).body.token as string;
      expect((await c.call('GET', '/v1/kv/payments/prod/db', { token: child })).status).to.equal(
        200,
      );
      return { parent, child };
    };

    it('a runtime role narrowed: the parent and the child it made with scopes both lose the read', async () => {
      const { parent, child } = await parentAndChild('payments-lead');
      expect((await role('payments-lead', ['nothing'])).status).to.equal(200);
      expect((await c.call('GET', '/v1/kv/payments/prod/db', { token: parent })).status).to.equal(
        403,
      );
      expect((await c.call('GET', '/v1/kv/payments/prod/db', { token: child })).status).to.equal(
        403,
      );
      // And a grandchild cannot be made with what the child's own scopes still say.
      const grand = await c.call('POST', '/v1/auth/token', {
        token: child,
        json: { scopes: [{ namespace: 'payments/*', read: true }] },
      });
      expect(grand.status).to.be.oneOf([401, 403]);
    });

    it("a parent's runtime role deleted (forced): its children are refused, reads and creations alike", async () => {
      const { parent, child } = await parentAndChild('ops-lead');
      expect((await c.call('DELETE', '/v1/sys/roles/ops-lead?force=true')).status).to.equal(204);
      expect((await c.call('GET', '/v1/kv/payments/prod/db', { token: parent })).status).to.equal(
        401,
      );
      expect((await c.call('GET', '/v1/kv/payments/prod/db', { token: child })).status).to.equal(
        401,
      );
      expect(
        (
          await c.call('POST', '/v1/auth/token', {
            token: child,
            json: { scopes: [{ namespace: 'payments/*', read: true }] },
          })
        ).status,
      ).to.equal(401);
    });
  });
});
