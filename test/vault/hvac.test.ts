import { execFile } from 'node:child_process';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
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

function runHvac(env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      DEBIAN_PYTHON,
      ['-c', SCRIPT],
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

  it('writes, reads by version, refuses a stale check-and-set, reads metadata, checks its token and the seal; a reader reads and may not write', async () => {
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
      sealed: false,
      policies: ['root'],
      reader: 'two',
      reader_write: 'Forbidden',
    });
    expect(out.stale_cas).to.include('check-and-set parameter did not match the current version');
  });
});
