import { expect } from 'chai';
import { auditLines } from '../support/audit-lines.js';
import { onEachBackend } from '../support/each-backend.js';
import type { TestCoffer } from '../support/harness.js';

/** The tests of a namespace's values, on the server `start` gives. */
function namespaceValues(start: () => Promise<TestCoffer>): void {
  let c: TestCoffer;
  let configReader: string;
  before(async () => {
    c = await start();
    await c.put('shop/prod/api_url', 'https://api.example', 'config');
    await c.put('shop/prod/db_password', 'pw-1', 'secret');
    await c.put('shop/prod/db_password', 'pw-2', 'secret');
    await c.put('shop/prod/log_level', 'info', 'config');
    await c.put('shop/prod/deeper/hidden', 'not a direct key', 'config');
    configReader = await c.token({ role: 'config-reader' });
  });
  after(async () => {
    await c?.close();
  });

  it('answers the latest value of each key directly in the namespace, in key order', async () => {
    const res = await c.call('GET', '/v1/kv/shop/prod/?values=true');
    expect(res.status).to.equal(200);
    expect(res.body.namespace).to.equal('shop/prod');
    expect(res.body.next_cursor).to.equal(null);
    expect(
      res.body.values.map((v: { key: string; version: number; value: string; type: string }) => [
        v.key,
        v.version,
        v.type,
        v.value,
      ]),
    ).to.deep.equal([
      ['api_url', 1, 'config', 'https://api.example'],
      ['db_password', 2, 'secret', 'pw-2'],
      ['log_level', 1, 'config', 'info'],
    ]);
    expect(res.body.values[0].created_at).to.match(/^\d{4}-\d\d-\d\dT/);
  });

  it('gives a config reader its config values only, without saying that a secret was left out', async () => {
    const res = await c.call('GET', '/v1/kv/shop/prod/?values=true', { token: configReader });
    expect(res.status).to.equal(200);
    expect(res.body.values.map((v: { key: string }) => v.key)).to.deep.equal([
      'api_url',
      'log_level',
    ]);
    expect(res.text).not.to.include('db_password');
  });

  it('pages by limit and cursor, and marks a multi-segment path as a namespace', async () => {
    const first = await c.call('GET', '/v1/kv/shop/prod/?values=true&limit=2');
    expect(first.body.values.map((v: { key: string }) => v.key)).to.deep.equal([
      'api_url',
      'db_password',
    ]);
    expect(first.body.next_cursor).to.be.a('string');
    const second = await c.call(
      'GET',
      `/v1/kv/shop/prod/?values=true&limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body.values.map((v: { key: string }) => v.key)).to.deep.equal(['log_level']);
    expect(second.body.next_cursor).to.equal(null);
    // A listing's cursor is not this one's.
    const listed = await c.call('GET', '/v1/kv/shop/?limit=1');
    const wrong = await c.call(
      'GET',
      `/v1/kv/shop/prod/?values=true&cursor=${listed.body.next_cursor}`,
    );
    expect(wrong.status).to.equal(400);
  });

  it('refuses a caller who may read nothing there (403), a version, and the root', async () => {
    const other = await c.token({ scopes: [{ namespace: 'elsewhere', read: true }] });
    const res = await c.call('GET', '/v1/kv/shop/prod/?values=true', { token: other });
    expect(res.status).to.equal(403);
    expect((await c.call('GET', '/v1/kv/shop/prod/?values=true&version=1')).status).to.equal(400);
    expect((await c.call('GET', '/v1/kv/?values=true')).status).to.equal(400);
    expect((await c.call('GET', '/v1/kv/shop/prod/?values=yes')).status).to.equal(400);
  });

  it('ends a page early once it holds 4 MiB of values, and the next page goes on from there', async () => {
    const big = 'v'.repeat(1024 * 1024);
    for (const key of ['a', 'b', 'c', 'd', 'e']) await c.put(`large/${key}`, big, 'secret');
    const first = await c.call('GET', '/v1/kv/large/?values=true');
    expect(first.body.values.map((v: { key: string }) => v.key)).to.deep.equal([
      'a',
      'b',
      'c',
      'd',
    ]);
    const rest = await c.call('GET', `/v1/kv/large/?values=true&cursor=${first.body.next_cursor}`);
    expect(rest.body.values.map((v: { key: string }) => v.key)).to.deep.equal(['e']);
    expect(rest.body.next_cursor).to.equal(null);
  });

  it('answers an empty page for a namespace with no keys directly in it', async () => {
    const res = await c.call('GET', '/v1/kv/shop/?values=true');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      kind: 'values',
      namespace: 'shop',
      values: [],
      next_cursor: null,
    });
  });

  it('audits the call as one read naming every key and version it returned, and search finds each', async () => {
    const res = await c.call('GET', '/v1/kv/shop/prod/?values=true', { token: configReader });
    const requestId = res.headers.get('x-request-id');
    const line = auditLines(c.config.audit.dir!).find(
      (l) => l.kind === 'request' && l.request_id === requestId,
    );
    expect(line).to.include({ action: 'read', namespace: 'shop/prod' });
    expect(line?.reads).to.deep.equal([
      { key: 'api_url', version: 1 },
      { key: 'log_level', version: 1 },
    ]);
    expect(JSON.stringify(line)).not.to.include('https://api.example');

    const byKey = await c.call(
      'GET',
      `/v1/sys/audit?key=${encodeURIComponent('shop/prod/log_level')}&request_id=${requestId}`,
    );
    expect(byKey.status).to.equal(200);
    expect(byKey.body.entries).to.have.length(1);
    const notReturned = await c.call(
      'GET',
      `/v1/sys/audit?key=${encodeURIComponent('shop/prod/db_password')}&request_id=${requestId}`,
    );
    expect(notReturned.body.entries).to.have.length(0);
  });
}

describe('a namespace’s values in one call (?values=true)', () => {
  onEachBackend(namespaceValues);
});
