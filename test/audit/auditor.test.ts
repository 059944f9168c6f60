import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { checkRoleRules } from '../../src/auth/roles.js';
import { auditFiles } from '../support/audit-lines.js';
import { type ApiResponse, startTestCoffer, type TestCoffer } from '../support/harness.js';

/**
 * The auditor role against every endpoint: it sees that namespaces, keys, versions and tokens exist and
 * reads the audit log and the seal report; it never sees a value, writes, deletes or manages tokens or keys.
 */
describe('the auditor role', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let auditor: string;
  let reader: string;
  let victimId: string;
  const secret = `secret-${Date.now()}-never-shown-to-auditors`;
  const config = `config-${Date.now()}-never-shown-to-auditors`;
  const bodies: string[] = [];

  before(async () => {
    c = await startTestCoffer();
    expect((await c.put('team/app/db', secret, 'secret')).status).to.equal(201);
    expect((await c.put('team/app/db', `${secret}-2`, 'secret')).status).to.equal(200);
    expect((await c.put('team/app/url', config, 'config')).status).to.equal(201);
    auditor = await c.token({ role: 'auditor', metadata: { name: 'audit-team' } });
    reader = await c.token({ role: 'reader' });
    victimId = reader.split('_')[1]!;
  });
  after(async () => {
    await c.close();
  });

  const as = async (
    token: string,
    method: string,
    path: string,
    json?: unknown,
  ): Promise<ApiResponse> => {
    const res = await c.call(method, path, { token, ...(json === undefined ? {} : { json }) });
    bodies.push(res.text);
    return res;
  };

  // [method, path, body, status for the auditor]
  const matrix: [string, string, unknown, number][] = [
    ['GET', '/v1/auth/me', undefined, 200],
    ['GET', '/v1/auth/tokens', undefined, 200],
    ['GET', '/v1/auth/tokens?all=true', undefined, 200],
    ['POST', '/v1/auth/token', { role: 'admin' }, 403],
    ['POST', '/v1/auth/token', { role: 'auditor' }, 403],
    ['DELETE', '/v1/auth/token/VICTIM', undefined, 403],
    ['GET', '/v1/kv/team/app/', undefined, 200],
    ['GET', '/v1/kv/team', undefined, 200],
    ['GET', '/v1/kv/team/app/db/versions', undefined, 200],
    ['GET', '/v1/kv/team/app/url/versions', undefined, 200],
    ['GET', '/v1/kv/team/app/db', undefined, 403],
    ['GET', '/v1/kv/team/app/db?version=1', undefined, 403],
    ['GET', '/v1/kv/team/app/url', undefined, 403],
    ['GET', '/v1/kv/team/app/url?version=1', undefined, 403],
    ['PUT', '/v1/kv/team/app/db', { value: 'overwritten', type: 'secret' }, 403],
    ['PUT', '/v1/kv/team/app/new', { value: 'new', type: 'config' }, 403],
    ['DELETE', '/v1/kv/team/app/db', undefined, 403],
    ['GET', '/v1/sys/keyring', undefined, 200],
    ['GET', '/v1/sys/keyring/rewrap', undefined, 200],
    ['POST', '/v1/sys/keyring/rotate', undefined, 403],
    ['POST', '/v1/sys/keyring/rewrap', undefined, 403],
    ['POST', '/v1/sys/keyring/retire', undefined, 403],
    ['POST', '/v1/sys/keyring/migrate', { key_provider: 'local' }, 403],
    ['GET', '/v1/sys/audit', undefined, 200],
    ['GET', '/v1/sys/audit/verify', undefined, 200],
    ['GET', '/v1/sys/seal-report', undefined, 200],
    ['GET', '/v1/sys/seal-report?verify=true', undefined, 200],
  ];

  for (const [method, path, json, status] of matrix) {
    it(`${method} ${path}${json ? ` ${JSON.stringify(json)}` : ''} → ${status}`, async () => {
      const res = await as(auditor, method, path.replace('VICTIM', victimId), json);
      expect(res.status, res.text).to.equal(status);
      if (status === 403) expect(res.body.code).to.equal('forbidden');
    });
  }

  it('changed nothing: values, versions, tokens and the keyring are as they were', async () => {
    expect((await c.call('GET', '/v1/kv/team/app/db')).body).to.include({
      value: `${secret}-2`,
      version: 2,
    });
    expect((await c.call('GET', '/v1/kv/team/app/new')).status).to.equal(404);
    expect((await c.call('GET', '/v1/auth/me', { token: reader })).status).to.equal(200);
    expect((await c.call('GET', '/v1/sys/keyring')).body.active_version).to.equal(1);
  });

  it('lists what exists: keys, versions (metadata only) and tokens', async () => {
    expect((await as(auditor, 'GET', '/v1/kv/team/app/')).body.keys).to.deep.equal(['db', 'url']);
    const versions = (await as(auditor, 'GET', '/v1/kv/team/app/db/versions')).body;
    expect(JSON.stringify(versions)).to.include('"version":2');
    const tokens = (await as(auditor, 'GET', '/v1/auth/tokens')).body.tokens as {
      id: string;
      metadata: unknown;
    }[];
    expect(tokens.map((t) => t.id)).to.include(victimId);
    expect(
      tokens.find((t) => t.metadata && (t.metadata as { name?: string }).name === 'audit-team'),
    ).to.not.equal(undefined);
  });

  it('says what it may do in /v1/auth/me', async () => {
    const me = (await as(auditor, 'GET', '/v1/auth/me')).body;
    expect(me).to.deep.include({
      role: 'auditor',
      is_root: false,
      privileges: ['list_tokens', 'read_keyring', 'read_audit'],
    });
    expect(me.capabilities).to.deep.equal([
      { namespace: '*', actions: ['list'], types: ['config', 'secret'] },
    ]);
  });

  it('never receives a value or another token in any response', () => {
    const all = bodies.join('\n');
    expect(all).not.to.include(secret);
    expect(all).not.to.include(config);
    expect(all).not.to.include(reader);
    expect(all).not.to.include(c.rootToken);
  });

  it('keeps the audit log and seal report from every other role; root has them', async () => {
    for (const role of ['admin', 'writer', 'reader', 'config-reader']) {
      const token = await c.token({ role });
      for (const path of [
        '/v1/sys/audit',
        '/v1/sys/audit/verify',
        '/v1/sys/seal-report',
        '/v1/sys/keyring',
      ]) {
        expect((await c.call('GET', path, { token })).status, `${role} ${path}`).to.equal(403);
      }
      // An admin (create_tokens) lists only the tokens it created: none here. The others may not list.
      const tokens = await c.call('GET', '/v1/auth/tokens', { token });
      if (role === 'admin') expect(tokens.body.tokens).to.deep.equal([]);
      else expect(tokens.status, `${role} /v1/auth/tokens`).to.equal(403);
    }
    const scoped = await c.token({ scopes: [{ namespace: '*', read: true, write: true }] });
    expect((await c.call('GET', '/v1/sys/audit', { token: scoped })).status).to.equal(403);
    expect((await c.call('GET', '/v1/sys/audit')).status).to.equal(200);
    expect((await c.call('GET', '/v1/sys/seal-report')).status).to.equal(200);
  });

  it('checks the log is intact over HTTP, without the master key, and learns which entry broke when one is edited', async () => {
    const token = await c.token({ role: 'auditor' });
    const intact = await c.call('GET', '/v1/sys/audit/verify', { token });
    expect(intact.status).to.equal(200);
    expect(intact.body).to.include({ intact: true });
    expect(intact.body.entries).to.be.greaterThan(10);
    expect(intact.body.coverage).to.include({ uncovered_count: 0 });
    expect(intact.body.coverage.by_request).to.be.greaterThan(0);
    // Someone edits a line of the log: the next check names it.
    const file = auditFiles(c.config.audit.dir!)[0]!;
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[3] = lines[3]!.replace('"ts":"2', '"ts":"1');
    writeFileSync(file, lines.join('\n'));
    const broken = await c.call('GET', '/v1/sys/audit/verify', { token });
    expect(broken.body).to.include({ intact: false, line: 5 });
    expect(broken.body.file).to.equal(file.split('/').at(-1));
    expect(broken.body.reason).to.match(/does not follow the entry before it/);
  });

  it('cannot be redefined by the configuration', () => {
    expect(
      checkRoleRules('auditor', [{ namespaces: ['*'], actions: ['read'], types: ['secret'] }]),
    ).to.deep.equal(['role "auditor" is built in and cannot be redefined']);
  });
});
