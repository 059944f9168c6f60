import { createRequire } from 'node:module';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { TestIssuer } from '../support/jwt-issuer.js';

interface NodeVault {
  read(
    path: string,
  ): Promise<{ data: { data: Record<string, unknown>; metadata: { version: number } } }>;
  write(path: string, body: unknown): Promise<{ data: { version: number } }>;
  list(path: string): Promise<{ data: { keys: string[] } }>;
  tokenLookupSelf(): Promise<{ data: { ttl: number; type: string; policies: string[] } }>;
  health(query?: Record<string, unknown>): Promise<{ initialized: boolean; sealed: boolean }>;
  kubernetesLogin(body: {
    role: string;
    jwt: string;
    mount_point: string;
  }): Promise<{ auth: { client_token: string } }>;
  token: string;
}

/** node-vault (npm, a devDependency at a pinned version), Vault's most used Node.js client. */
const nodeVault = createRequire(import.meta.url)('node-vault') as (options: {
  apiVersion: string;
  endpoint: string;
  token?: string;
}) => NodeVault;

describe("node-vault against Coffer's /vault: the core flow", function () {
  this.timeout(30_000);
  let c: TestCoffer;
  let k8s: TestIssuer;
  before(async () => {
    k8s = await TestIssuer.start('RS256');
    c = await startTestCoffer();
    const res = await c.call('PUT', '/v1/sys/login-roles/kubernetes', {
      json: {
        issuer: k8s.url,
        jwks_url: k8s.jwksUrl,
        bound_audiences: ['coffer'],
        scopes: [{ namespace: 'team/*', read: true, write: true }],
        ttl: 300,
      },
    });
    expect(res.status, res.text).to.equal(201);
  });
  after(async () => {
    await c?.close();
    await k8s?.close();
  });

  it('logs in with a Kubernetes JWT, writes, reads and lists (the LIST verb) secrets, looks its token up, and reads the health', async () => {
    const vault = nodeVault({ apiVersion: 'v1', endpoint: `${c.url}/vault` });
    const health = await vault.health({ standbyok: true });
    expect(health).to.include({ initialized: true, sealed: false });
    // node-vault 0.12 fills the path's mount from the call's arguments only: mount_point, as its users pass.
    const login = await vault.kubernetesLogin({
      mount_point: 'kubernetes',
      role: 'kubernetes',
      jwt: await k8s.sign(k8s.kubernetesClaims('team', 'api')),
    });
    vault.token = login.auth.client_token;
    expect(
      (await vault.write('secret/data/team/app', { data: { user: 'app', pw: 'one' } })).data
        .version,
    ).to.equal(1);
    const read = await vault.read('secret/data/team/app');
    expect(read.data.data).to.deep.equal({ user: 'app', pw: 'one' });
    expect(read.data.metadata.version).to.equal(1);
    await vault.write('secret/data/team/db/main', { data: { pw: 'two' } });
    // node-vault sends the LIST verb; Coffer answers it 303 to ?list=true, which axios follows with GET.
    expect((await vault.list('secret/metadata/team')).data.keys).to.deep.equal(['app', 'db/']);
    const self = await vault.tokenLookupSelf();
    expect(self.data.type).to.equal('service');
    expect(self.data.ttl).to.be.within(290, 300);
    // A path its scopes do not cover: Vault's 403, which node-vault throws with its status.
    const refused = await vault.read('secret/data/other/app').then(
      () => null,
      (err: { response?: { statusCode?: number } }) => err.response?.statusCode,
    );
    expect(refused).to.equal(403);
  });
});
