import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { Coffer, CofferError } from '../../src/client/index.js';
import { auditLines } from '../support/audit-lines.js';
import { eventually } from '../support/eventually.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { TestIssuer } from '../support/jwt-issuer.js';
import { command } from '../support/process.js';

describe('a JWT login instead of a token: the client, coffer run --jwt-file, coffer export', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let k8s: TestIssuer;
  let dir: string;
  let jwtFile: string;
  /** The projected service-account token the platform keeps in a file, for a pod named `pod`. */
  const project = async (pod: string) =>
    writeFileSync(jwtFile, `${await k8s.sign(k8s.kubernetesClaims('payments', 'api', pod))}\n`);

  before(async () => {
    k8s = await TestIssuer.start('RS256');
    c = await startTestCoffer();
    const res = await c.call('PUT', '/v1/sys/login-roles/payments-pods', {
      json: {
        issuer: k8s.url,
        jwks_url: k8s.jwksUrl,
        bound_audiences: ['coffer'],
        scopes: [{ namespace: 'apps/{claims.kubernetes.io.namespace}', read: true }],
        ttl: 3,
        max_ttl: 60,
        claims_to_metadata: { 'kubernetes.io.pod.name': 'pod' },
      },
    });
    expect(res.status, res.text).to.equal(201);
    await c.put('apps/payments/db_password', 's3cret-payments');
    await c.put('apps/payments/log_level', 'debug', 'config');
    dir = tempDir();
    jwtFile = join(dir, 'token');
  });
  after(async () => {
    await c?.close();
    await k8s?.close();
  });

  it('logs in with the file’s JWT, again once two thirds of the token’s life have passed, reading the file again', async () => {
    await project('api-1');
    const coffer = new Coffer({ url: c.url, jwtLogin: { role: 'payments-pods', jwtFile } });
    expect((await coffer.get('apps/payments', 'db_password')).value).to.equal('s3cret-payments');
    const first = await coffer.self();
    expect(first.metadata.pod).to.equal('api-1');
    expect(coffer.session!.logins).to.equal(1);
    // The platform rotates the file; the token (3 s) is renewed by a new login after 2 s.
    await project('api-2');
    // Each call before then is still the first login's; the first after it logs in again.
    await eventually(async () => (await coffer.self()).metadata.pod === 'api-2', {
      what: 'a new login',
      interval: 100,
    });
    const second = await coffer.self();
    expect(coffer.session!.logins).to.equal(2);
    expect(second.id).to.not.equal(first.id);
    expect(second.metadata.pod).to.equal('api-2');
  });

  it('logs in again at once when its token is refused (revoked), and the call goes through', async () => {
    await project('api-3');
    const coffer = new Coffer({ url: c.url, jwtLogin: { role: 'payments-pods', jwtFile } });
    const before = await coffer.self();
    expect((await c.call('DELETE', `/v1/auth/token/${before.id}`)).status).to.equal(204);
    // A write too: a refused token acknowledges nothing, so sending it again is safe.
    expect((await coffer.get('apps/payments', 'db_password')).value).to.equal('s3cret-payments');
    expect(coffer.session!.logins).to.equal(2);
  });

  it('fails with no_token for a missing or empty JWT file, and 401 for a JWT the login role refuses', async () => {
    const missing = new Coffer({
      url: c.url,
      jwtLogin: { role: 'payments-pods', jwtFile: join(dir, 'absent') },
    });
    const err = await missing.self().catch((e: unknown) => e);
    expect(err).to.be.instanceOf(CofferError);
    expect((err as CofferError).code).to.equal('no_token');
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n');
    const noJwt = await new Coffer({
      url: c.url,
      jwtLogin: { role: 'payments-pods', jwtFile: empty },
    })
      .self()
      .catch((e: unknown) => e);
    expect((noJwt as CofferError).code).to.equal('no_token');
    const wrong = join(dir, 'wrong');
    writeFileSync(wrong, await k8s.sign({ ...k8s.kubernetesClaims('payments', 'api'), aud: 'x' }));
    const refused = await new Coffer({
      url: c.url,
      jwtLogin: { role: 'payments-pods', jwtFile: wrong },
    })
      .self()
      .catch((e: unknown) => e);
    expect((refused as CofferError).status).to.equal(401);
  });

  it('takes COFFER_JWT_FILE with COFFER_LOGIN_ROLE, and refuses one without the other or beside a token', () => {
    const env = {
      COFFER_ADDR: c.url,
      COFFER_JWT_FILE: jwtFile,
      COFFER_LOGIN_ROLE: 'payments-pods',
    };
    expect(new Coffer({}, env).session).to.not.equal(undefined);
    expect(() => new Coffer({}, { COFFER_JWT_FILE: jwtFile })).to.throw(/COFFER_LOGIN_ROLE/);
    expect(() => new Coffer({}, { ...env, COFFER_TOKEN: c.rootToken })).to.throw(/not both/);
  });

  it('coffer kv with COFFER_JWT_FILE reuses the token it got (kept owner-only per server and JWT identity) instead of a login each command; a refused one is replaced', async () => {
    const res = await c.call('PUT', '/v1/sys/login-roles/payments-cli', {
      json: {
        issuer: k8s.url,
        jwks_url: k8s.jwksUrl,
        bound_audiences: ['coffer'],
        scopes: [{ namespace: 'apps/{claims.kubernetes.io.namespace}', read: true }],
        ttl: 600,
      },
    });
    expect(res.status, res.text).to.equal(201);
    await project('cli-1');
    const home = tempDir();
    const env = {
      COFFER_ADDR: c.url,
      COFFER_JWT_FILE: jwtFile,
      COFFER_LOGIN_ROLE: 'payments-cli',
      XDG_CONFIG_HOME: home,
    };
    const logins = () =>
      auditLines(c.config.audit.dir!).filter(
        (l) => l.event === 'token.create' && l.login_role === 'payments-cli',
      );
    for (let i = 0; i < 3; i++) {
      const got = await command(['kv', 'get', 'apps/payments/log_level'], env);
      expect(got.code, got.stderr).to.equal(0);
      expect(got.stdout).to.equal('debug');
    }
    expect(logins()).to.have.length(1);
    const kept = readdirSync(join(home, 'coffer', 'jwt-logins'));
    expect(kept).to.have.length(1);
    expect(statSync(join(home, 'coffer', 'jwt-logins', kept[0]!)).mode & 0o777).to.equal(0o600);
    expect(readFileSync(jwtFile, 'utf8')).to.not.equal('');
    // Revoked: the next command's call is refused, it logs in again at once, and goes through.
    const id = logins()[0]!.token_id as string;
    expect((await c.call('DELETE', `/v1/auth/token/${id}`)).status).to.equal(204);
    const after = await command(['kv', 'get', 'apps/payments/log_level'], env);
    expect(after.code, after.stderr).to.equal(0);
    expect(logins()).to.have.length(2);
  });

  it('coffer run --jwt-file --login-role gives the command its values, never the JWT file’s path', async () => {
    await project('api-4');
    const env = { COFFER_ADDR: c.url };
    const run = await command(
      [
        'run',
        '--ns',
        'apps/payments',
        '--jwt-file',
        jwtFile,
        '--login-role',
        'payments-pods',
        '--',
        process.execPath,
        '-e',
        'process.stdout.write(JSON.stringify([process.env.DB_PASSWORD, process.env.LOG_LEVEL, process.env.COFFER_JWT_FILE ?? null, process.env.COFFER_LOGIN_ROLE ?? null]))',
      ],
      env,
    );
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout)).to.deep.equal(['s3cret-payments', 'debug', null, null]);
    const exported = await command(
      [
        'export',
        '--ns',
        'apps/payments',
        '--format',
        'json',
        '--jwt-file',
        jwtFile,
        '--login-role',
        'payments-pods',
      ],
      env,
    );
    expect(JSON.parse(exported.stdout)).to.deep.equal({
      DB_PASSWORD: 's3cret-payments',
      LOG_LEVEL: 'debug',
    });
    const half = await command(
      ['run', '--ns', 'apps/payments', '--jwt-file', jwtFile, '--', 'true'],
      env,
    );
    expect(half.code).to.equal(2);
    expect(half.stderr).to.include('--jwt-file and --login-role go together');
  });
});
