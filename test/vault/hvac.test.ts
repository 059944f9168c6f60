import { execFile } from 'node:child_process';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { TestIssuer } from '../support/jwt-issuer.js';
import { DEBIAN_PYTHON, requirePackage } from '../support/system-packages.js';

/** hvac (Debian's python3-hvac), Vault's Python client, driven against Coffer as it would drive a Vault. */
const SCRIPT = `
import json, os, hvac
c = hvac.Client(url=os.environ['VAULT_ADDR'], token=os.environ['VAULT_TOKEN'])
kv = c.secrets.kv.v2
out = {'hvac': hvac.__version__ if hasattr(hvac, '__version__') else 'unknown'}
out['authenticated'] = c.is_authenticated()
out['v1'] = kv.create_or_update_secret(path='team/app', secret={'user': 'app', 'pw': 'one'})['data']['version']
out['v2'] = kv.create_or_update_secret(path='team/app', secret={'user': 'app', 'pw': 'two'}, cas=1)['data']['version']
out['latest'] = kv.read_secret_version(path='team/app')['data']['data']
out['first'] = kv.read_secret_version(path='team/app', version=1)['data']['data']
try:
    kv.create_or_update_secret(path='team/app', secret={'pw': 'three'}, cas=1)
    out['stale_cas'] = 'accepted'
except hvac.exceptions.InvalidRequest as e:
    out['stale_cas'] = str(e)
try:
    kv.read_secret_version(path='team/none')
    out['missing'] = 'found'
except hvac.exceptions.InvalidPath:
    out['missing'] = 'InvalidPath'
out['current'] = kv.read_secret_metadata(path='team/app')['data']['current_version']
kv.create_or_update_secret(path='team/db/main', secret={'pw': 'x'})
out['listed'] = kv.list_secrets(path='team')['data']['keys']
out['listed_root'] = kv.list_secrets(path='')['data']['keys']
out['sealed'] = c.sys.is_sealed()
out['policies'] = c.auth.token.lookup_self()['data']['policies']
reader = hvac.Client(url=os.environ['VAULT_ADDR'], token=os.environ['READER_TOKEN'])
out['reader'] = reader.secrets.kv.v2.read_secret_version(path='team/app')['data']['data']['pw']
try:
    reader.secrets.kv.v2.create_or_update_secret(path='team/app', secret={'pw': 'mine'})
    out['reader_write'] = 'accepted'
except hvac.exceptions.Forbidden:
    out['reader_write'] = 'Forbidden'
print(json.dumps(out))
`;

/** Delete, undelete and destroy, as hvac sends them (Coffer's trash underneath). */
const TRASH_SCRIPT = `
import json, os, hvac
c = hvac.Client(url=os.environ['VAULT_ADDR'], token=os.environ['VAULT_TOKEN'])
kv = c.secrets.kv.v2
out = {}
def status(call):
    try:
        call()
        return 'ok'
    except hvac.exceptions.InvalidPath:
        return 'InvalidPath'
    except hvac.exceptions.InvalidRequest:
        return 'InvalidRequest'
kv.create_or_update_secret(path='team/trash', secret={'a': '1'})
kv.create_or_update_secret(path='team/trash', secret={'a': '2'})
kv.delete_latest_version_of_secret(path='team/trash')
out['read_deleted'] = status(lambda: kv.read_secret_version(path='team/trash'))
meta = kv.read_secret_metadata(path='team/trash')['data']
out['deletion_time_set'] = meta['versions']['2']['deletion_time'] != ''
out['v1_still'] = kv.read_secret_version(path='team/trash', version=1)['data']['data']
kv.undelete_secret_versions(path='team/trash', versions=[2])
out['undeleted'] = kv.read_secret_version(path='team/trash')['data']['data']
kv.delete_secret_versions(path='team/trash', versions=[2])
out['deleted_again'] = status(lambda: kv.read_secret_version(path='team/trash'))
out['delete_older'] = status(lambda: kv.delete_secret_versions(path='team/trash', versions=[1]))
out['v1_deleted'] = status(lambda: kv.read_secret_version(path='team/trash', version=1))
out['v1_deletion_time_set'] = kv.read_secret_metadata(path='team/trash')['data']['versions']['1']['deletion_time'] != ''
kv.undelete_secret_versions(path='team/trash', versions=[1])
out['v1_back'] = kv.read_secret_version(path='team/trash', version=1)['data']['data']
out['destroy_some'] = status(lambda: kv.destroy_secret_versions(path='team/trash', versions=[1]))
out['v1_destroyed'] = status(lambda: kv.read_secret_version(path='team/trash', version=1))
flags = lambda: [v['destroyed'] for k, v in sorted(kv.read_secret_metadata(path='team/trash')['data']['versions'].items())]
out['destroyed_flags'] = flags()
kv.destroy_secret_versions(path='team/trash', versions=[1, 2])
out['after_destroy'] = flags()
kv.create_or_update_secret(path='team/live', secret={'n': '1'})
kv.create_or_update_secret(path='team/live', secret={'n': '2'})
kv.create_or_update_secret(path='team/live', secret={'n': '3'})
kv.destroy_secret_versions(path='team/live', versions=[2])
out['live_latest'] = kv.read_secret_version(path='team/live')['data']['data']
out['live_v2'] = status(lambda: kv.read_secret_version(path='team/live', version=2))
kv.create_or_update_secret(path='team/gone', secret={'x': '1'})
kv.delete_metadata_and_all_versions(path='team/gone')
out['after_metadata_delete'] = status(lambda: kv.read_secret_version(path='team/gone', version=1))
kv.create_or_update_secret(path='team/kept', secret={'v': '1'})
kv.update_metadata(path='team/kept', max_versions=2)
kv.create_or_update_secret(path='team/kept', secret={'v': '2'})
kv.create_or_update_secret(path='team/kept', secret={'v': '3'})
kept = kv.read_secret_metadata(path='team/kept')['data']
out['kept'] = [kept['max_versions'], sorted(kept['versions'].keys())]
out['cas_required'] = status(lambda: kv.update_metadata(path='team/kept', cas_required=True))
out['bare_write'] = status(lambda: kv.create_or_update_secret(path='team/kept', secret={'v': '4'}))
out['cas_write'] = status(lambda: kv.create_or_update_secret(path='team/kept', secret={'v': '4'}, cas=3))
out['cas_required_read'] = kv.read_secret_metadata(path='team/kept')['data']['cas_required']
print(json.dumps(out))
`;

/** delete_version_after through hvac's metadata write: a version deleted its time after it is written. */
const DELETE_AFTER_SCRIPT = `
import json, os, time, hvac
c = hvac.Client(url=os.environ['VAULT_ADDR'], token=os.environ['VAULT_TOKEN'])
kv = c.secrets.kv.v2
out = {}
kv.create_or_update_secret(path='team/temp', secret={'t': '1'})
kv.update_metadata(path='team/temp', delete_version_after='1s')
out['setting'] = kv.read_secret_metadata(path='team/temp')['data']['delete_version_after']
written = kv.create_or_update_secret(path='team/temp', secret={'t': '2'})['data']
out['written_deletion_time_set'] = written['deletion_time'] != ''
out['read_before'] = kv.read_secret_version(path='team/temp')['data']['data']
time.sleep(1.3)
try:
    kv.read_secret_version(path='team/temp')
    out['read_after'] = 'found'
except hvac.exceptions.InvalidPath:
    out['read_after'] = 'InvalidPath'
versions = kv.read_secret_metadata(path='team/temp')['data']['versions']
out['deletion_times_set'] = [versions['1']['deletion_time'] != '', versions['2']['deletion_time'] != '']
out['v1'] = kv.read_secret_version(path='team/temp', version=1)['data']['data']
kv.undelete_secret_versions(path='team/temp', versions=[2])
out['undeleted'] = kv.read_secret_version(path='team/temp')['data']['data']
kv.update_metadata(path='team/temp', delete_version_after='1h30m')
out['setting_again'] = kv.read_secret_metadata(path='team/temp')['data']['delete_version_after']
try:
    kv.update_metadata(path='team/temp', delete_version_after='1500ms')
    out['fraction'] = 'accepted'
except hvac.exceptions.InvalidRequest:
    out['fraction'] = 'InvalidRequest'
print(json.dumps(out))
`;

/** JWT and Kubernetes logins as hvac sends them, then a read with the token each gives. */
const LOGIN_SCRIPT = `
import json, os, hvac
out = {}
c = hvac.Client(url=os.environ['VAULT_ADDR'])
out['before'] = c.is_authenticated()
login = c.auth.jwt.jwt_login(role='deploy', jwt=os.environ['CI_JWT'])['auth']
out['jwt'] = {'policies': login['policies'], 'token_type': login['token_type'], 'renewable': login['renewable']}
out['jwt_authenticated'] = c.is_authenticated()
out['jwt_read'] = c.secrets.kv.v2.read_secret_version(path='deploy/api')['data']['data']
try:
    c.auth.jwt.jwt_login(role='deploy', jwt=os.environ['FORGED_JWT'])
    out['forged'] = 'accepted'
except hvac.exceptions.VaultError as e:
    out['forged'] = type(e).__name__
k = hvac.Client(url=os.environ['VAULT_ADDR'])
k.auth.kubernetes.login(role='pods', jwt=os.environ['K8S_JWT'])
out['k8s_ttl_positive'] = k.auth.token.lookup_self()['data']['ttl'] > 0
out['k8s_read'] = k.secrets.kv.v2.read_secret_version(path='deploy/api')['data']['data']
print(json.dumps(out))
`;

function runHvac(env: Record<string, string>, script = SCRIPT): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      DEBIAN_PYTHON,
      ['-c', script],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`hvac failed: ${stderr || err.message}`));
        else resolve(JSON.parse(stdout) as Record<string, unknown>);
      },
    );
  });
}

describe("hvac, Vault's Python client (Debian's python3-hvac), against Coffer's /vault", function () {
  this.timeout(60_000);
  let c: TestCoffer;
  before(async function () {
    requirePackage(this, 'hvac');
    c = await startTestCoffer();
  });
  after(async () => {
    await c?.close();
  });

  it('writes, reads by version, lists, refuses a stale check-and-set, reads metadata, checks its token and the seal; a reader reads and may not write', async () => {
    const reader = await c.token({ role: 'reader' });
    const out = await runHvac({
      VAULT_ADDR: `${c.url}/vault`,
      VAULT_TOKEN: c.rootToken,
      READER_TOKEN: reader,
    });
    expect(out).to.deep.include({
      authenticated: true,
      v1: 1,
      v2: 2,
      latest: { user: 'app', pw: 'two' },
      first: { user: 'app', pw: 'one' },
      missing: 'InvalidPath',
      current: 2,
      // list_secrets sends the LIST verb: answered 303 to ?list=true, which requests follows with GET.
      listed: ['app', 'db/'],
      listed_root: ['team/'],
      sealed: false,
      policies: ['root'],
      reader: 'two',
      reader_write: 'Forbidden',
    });
    expect(out.stale_cas).to.include('check-and-set parameter did not match the current version');
  });

  it("deletes, undeletes and destroys through Coffer's trash; deletes, undeletes and destroys single versions; requires check-and-set where the metadata says so", async () => {
    const out = await runHvac(
      { VAULT_ADDR: `${c.url}/vault`, VAULT_TOKEN: c.rootToken },
      TRASH_SCRIPT,
    );
    expect(out).to.deep.equal({
      read_deleted: 'InvalidPath',
      deletion_time_set: true,
      v1_still: { a: '1' },
      undeleted: { a: '2' },
      deleted_again: 'InvalidPath',
      // One version at a time, as Vault does: the others stay readable.
      delete_older: 'ok',
      v1_deleted: 'InvalidPath',
      v1_deletion_time_set: true,
      v1_back: { a: '1' },
      destroy_some: 'ok',
      v1_destroyed: 'InvalidPath',
      destroyed_flags: [true, false],
      after_destroy: [true, true],
      live_latest: { n: '3' },
      live_v2: 'InvalidPath',
      after_metadata_delete: 'InvalidPath',
      // max_versions through Vault's metadata write: the oldest version pruned by the third write.
      kept: [2, ['2', '3']],
      // cas_required through Vault's metadata write: a write without cas refused as Vault refuses it.
      cas_required: 'ok',
      bare_write: 'InvalidRequest',
      cas_write: 'ok',
      cas_required_read: true,
    });
    // The same keys through Coffer's own API: team/trash's versions and team/gone are destroyed.
    const destroyed = await c.call('GET', '/v1/kv/team/trash?version=1');
    expect(destroyed.status).to.equal(404);
    expect(destroyed.body.destroyed).to.equal(true);
    expect((await c.call('GET', '/v1/kv/team/gone/versions')).status).to.equal(404);
  });

  it('sets delete_version_after (update_metadata): a version written after reads until its time, then as deleted (InvalidPath, with its deletion_time), and comes back with undelete', async () => {
    const out = await runHvac(
      { VAULT_ADDR: `${c.url}/vault`, VAULT_TOKEN: c.rootToken },
      DELETE_AFTER_SCRIPT,
    );
    expect(out).to.deep.equal({
      setting: '1s',
      written_deletion_time_set: true,
      read_before: { t: '2' },
      read_after: 'InvalidPath',
      // Version 1 was written before the setting: it keeps no time, as in Vault.
      deletion_times_set: [false, true],
      v1: { t: '1' },
      undeleted: { t: '2' },
      setting_again: '1h30m0s',
      fraction: 'InvalidRequest',
    });
  });

  it('logs in with a JWT (jwt_login) and a Kubernetes service-account token (kubernetes.login), and reads with each token; a token signed by another key is refused', async () => {
    const issuer = await TestIssuer.start('RS256');
    const stranger = await TestIssuer.start('RS256');
    try {
      const role = (bound: Record<string, unknown>) => ({
        issuer: issuer.url,
        jwks_url: issuer.jwksUrl,
        bound_audiences: ['coffer'],
        bound_claims: bound,
        scopes: [{ namespace: 'deploy', read: true }],
        ttl: 300,
      });
      for (const [name, body] of [
        ['deploy', role({ repository: 'acme/api' })],
        ['pods', role({ 'kubernetes.io.serviceaccount.name': 'api' })],
      ] as const) {
        const res = await c.call('PUT', `/v1/sys/login-roles/${name}`, { json: body });
        expect(res.status, res.text).to.equal(201);
      }
      await c.call('PUT', '/v1/kv/deploy/api', {
        json: { value: JSON.stringify({ key: 'k1' }), type: 'secret' },
      });
      // A JWT signed by a key the issuer's JWKS does not hold, claiming the issuer.
      const forged = await stranger.sign({
        ...issuer.githubClaims('acme/api', 'refs/heads/main'),
        iss: issuer.url,
      });
      const out = await runHvac(
        {
          VAULT_ADDR: `${c.url}/vault`,
          CI_JWT: await issuer.sign(issuer.githubClaims('acme/api', 'refs/heads/main')),
          FORGED_JWT: forged,
          K8S_JWT: await issuer.sign(issuer.kubernetesClaims('prod', 'api')),
        },
        LOGIN_SCRIPT,
      );
      expect(out).to.deep.equal({
        before: false,
        // A login role's token is of Coffer's role `scoped`, shown as Vault's policies.
        jwt: { policies: ['scoped'], token_type: 'service', renewable: true },
        jwt_authenticated: true,
        jwt_read: { key: 'k1' },
        // Coffer refuses a JWT it cannot verify 401, as its own login does; hvac raises Unauthorized.
        forged: 'Unauthorized',
        k8s_ttl_positive: true,
        k8s_read: { key: 'k1' },
      });
    } finally {
      await issuer.close();
      await stranger.close();
    }
  });
});
