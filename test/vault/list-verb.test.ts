import { expect } from 'chai';
import { listRedirectTarget } from '../../src/http/list-verb.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { rawExchange } from '../support/raw-http.js';

/** Vault's LIST verb (hvac, node-vault): Node's parser refuses it, Coffer answers 303 to ?list=true. */
describe("Vault's LIST verb: a 303 to the same path with list=true", function () {
  this.timeout(30_000);
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c?.close();
  });

  const list = (target: string) =>
    rawExchange(
      c.url,
      Buffer.from(`LIST ${target} HTTP/1.1\r\nHost: coffer\r\nX-Vault-Token: t\r\n\r\n`),
    );

  it('answers a LIST under /vault/v1 with 303, Location the same path with list=true, and closes the connection', async () => {
    const raw = await list('/vault/v1/secret/metadata/team');
    const [head] = raw.split('\r\n\r\n');
    expect(head).to.match(/^HTTP\/1\.1 303 See Other\r\n/);
    expect(head).to.include('\r\nLocation: /vault/v1/secret/metadata/team?list=true\r\n');
    expect(raw).to.include('\r\nConnection: close\r\n');
    expect(head).to.match(/\r\nX-Request-Id: [0-9A-Za-z]{16}/);
    expect(raw).to.include('ask again with GET and list=true');
    // A query the client sent is kept.
    expect(await list('/vault/v1/secret/metadata/?x=1')).to.include(
      '\r\nLocation: /vault/v1/secret/metadata/?x=1&list=true\r\n',
    );
  });

  it('the redirect, followed with GET and the token, lists the folder', async () => {
    await c.call('PUT', '/v1/kv/team/app', { json: { value: 'v', type: 'secret' } });
    const location = /\r\nLocation: (\S+)\r\n/.exec(
      await list('/vault/v1/secret/metadata/team'),
    )![1]!;
    const res = await c.call('GET', location, {
      token: null,
      headers: { 'x-vault-token': c.rootToken },
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.keys).to.deep.equal(['app']);
  });

  it('refuses (400) a LIST elsewhere, one that would leave the origin, and one that already says list', async () => {
    for (const target of [
      '/v1/kv/team/',
      '//evil.example/vault/v1/secret/metadata/',
      '/vault/v1/../../v1/kv/',
      '/vault/v1/secret/metadata/?list=false',
    ]) {
      const raw = await list(target);
      expect(raw, target).to.match(/^HTTP\/1\.1 400 /);
      expect(raw, target).not.to.include('Location:');
    }
  });

  it('a write pipelined before a LIST in one packet is answered before the 303, never committed unanswered', async () => {
    const body = JSON.stringify({ data: { password: 'pipelined' } });
    const write = `POST /vault/v1/secret/data/pipe/db HTTP/1.1\r\nHost: coffer\r\nX-Vault-Token: ${c.rootToken}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const listing = 'LIST /vault/v1/secret/metadata/pipe HTTP/1.1\r\nHost: coffer\r\n\r\n';
    const raw = await rawExchange(c.url, Buffer.from(write + listing));
    const answers = raw.match(/HTTP\/1\.1 \d{3}/g) ?? [];
    expect(answers, raw).to.deep.equal(['HTTP/1.1 200', 'HTTP/1.1 303']);
    expect(raw).to.include('"version":1');
    expect((await c.call('GET', '/v1/kv/pipe/db')).status).to.equal(200);
  });

  it('finds the LIST where the parser stopped, also behind another request in the same packet', () => {
    const get = 'GET /v1/sys/health HTTP/1.1\r\nHost: x\r\n\r\n';
    const listing = 'LIST /vault/v1/secret/metadata/a HTTP/1.1\r\nHost: x\r\n\r\n';
    const rawPacket = Buffer.from(get + listing);
    expect(
      listRedirectTarget({
        code: 'HPE_INVALID_METHOD',
        bytesParsed: get.length + 2,
        rawPacket,
      }),
    ).to.equal('/vault/v1/secret/metadata/a?list=true');
    // The same bytes inside a header value or a body are not a request line.
    const inHeader = Buffer.from('GET / HTTP/1.1\r\nX-A: LIST /vault/v1/x HTTP/1.1\r\n\r\n');
    expect(
      listRedirectTarget({ code: 'HPE_INVALID_METHOD', bytesParsed: 24, rawPacket: inHeader }),
    ).to.equal(undefined);
    // Right after another request's body, when one came before it; never inside a longer method.
    const post = 'POST /v1/x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}';
    const afterBody = { code: 'HPE_INVALID_METHOD', bytesParsed: post.length + 2 };
    expect(
      listRedirectTarget({ ...afterBody, rawPacket: Buffer.from(post + listing) }, true),
    ).to.equal('/vault/v1/secret/metadata/a?list=true');
    expect(
      listRedirectTarget({ ...afterBody, rawPacket: Buffer.from(`${post}X${listing}`) }, true),
    ).to.equal(undefined);
    // Another refusal is not a LIST.
    expect(
      listRedirectTarget({
        code: 'HPE_INVALID_VERSION',
        bytesParsed: 2,
        rawPacket: Buffer.from(listing),
      }),
    ).to.equal(undefined);
  });
});
