import { expect } from 'chai';
import { bodyLimit } from '../../src/http/http-app.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { rawExchange } from '../support/raw-http.js';

describe('HTTP errors and limits', () => {
  let c: TestCoffer;
  const MAX = 1024;
  before(async () => {
    c = await startTestCoffer({ env: { COFFER_MAX_VALUE_BYTES: String(MAX) } });
  });
  after(async () => {
    await c.close();
  });

  function expectProblem(
    res: { status: number; headers: Headers; body: Record<string, unknown> },
    status: number,
    code: string,
  ): void {
    expect(res.status).to.equal(status);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.body).to.include({ status, code, type: `urn:coffer:problem:${code}` });
    expect(res.body.title).to.be.a('string');
    expect(res.body.detail).to.be.a('string').and.not.be.empty;
  }

  it("400 for a value outside a field's allowed set names the allowed ones", async () => {
    const res = await c.call('PUT', '/v1/kv/errs/typed', { json: { value: 'v', type: 'secrett' } });
    expect(res.status).to.equal(400);
    expect(res.body.errors).to.deep.include({
      field: '/type',
      in: 'body',
      message: 'must be one of: "config", "secret"',
    });
    expect(res.body.detail).to.include('/type must be one of: "config", "secret"');
  });

  it('400 for a value POSTed to a key says that POST undeletes and PUT writes', async () => {
    const res = await c.call('POST', '/v1/kv/errs/posted', {
      json: { value: 'v', type: 'secret' },
    });
    expect(res.status).to.equal(400);
    expect(res.body.detail).to.include('unknown field "value"');
    expect(res.body.detail).to.include('a value is written with PUT');
    expect((await c.call('GET', '/v1/kv/errs/posted')).status).to.equal(404);
  });

  it('413 for a value over COFFER_MAX_VALUE_BYTES (UTF-8 bytes), and nothing is stored', async () => {
    expectProblem(await c.put('lim/big', 'x'.repeat(MAX + 1)), 413, 'payload_too_large');
    expectProblem(await c.put('lim/multi', 'é'.repeat(MAX / 2 + 1)), 413, 'payload_too_large');
    expect((await c.call('GET', '/v1/kv/lim/big')).status).to.equal(404);
  });

  it('accepts a value of exactly the limit, even when its JSON escaping is six times larger', async () => {
    expect((await c.put('lim/exact', 'x'.repeat(MAX))).status).to.equal(201);
    const controls = '\u0001'.repeat(MAX);
    const res = await c.put('lim/escaped', controls);
    expect(res.status).to.equal(201);
    expect((await c.call('GET', '/v1/kv/lim/escaped')).body.value).to.equal(controls);
  });

  it('413 for a body over the body limit', async () => {
    expectProblem(
      await c.call('PUT', '/v1/kv/lim/huge', {
        body: JSON.stringify({ value: 'x', type: 'secret', pad: 'p'.repeat(bodyLimit(MAX)) }),
        headers: { 'content-type': 'application/json' },
      }),
      413,
      'payload_too_large',
    );
  });

  it('415 for a body without Content-Type: application/json', async () => {
    const body = JSON.stringify({ value: 'x', type: 'config' });
    expectProblem(await c.call('PUT', '/v1/kv/ct/k', { body }), 415, 'unsupported_media_type');
    expectProblem(
      await c.call('PUT', '/v1/kv/ct/k', { body, headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
    );
    expectProblem(
      await c.call('POST', '/v1/auth/token', {
        body: '{"role":"reader"}',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    );
    expect(
      (
        await c.call('PUT', '/v1/kv/ct/k', {
          body,
          headers: { 'content-type': 'application/json; charset=utf-8' },
        })
      ).status,
    ).to.equal(201);
  });

  it('415 for a body in any charset but UTF-8 (UTF-16 would pass the byte-level depth check), and nothing is stored', async () => {
    const deep = `{"value":"x","type":"config","a":${'['.repeat(1000)}${']'.repeat(1000)}}`;
    for (const charset of ['utf-16le', 'UTF-16', '"utf-16be"', 'latin1', 'utf-32', 'utf8']) {
      const res = await c.call('PUT', '/v1/kv/cs/k', {
        body: deep,
        headers: { 'content-type': `application/json; charset=${charset}` },
      });
      expectProblem(res, 415, 'unsupported_media_type');
      expect(res.body.detail).to.match(/must be UTF-8/);
    }
    expect((await c.call('GET', '/v1/kv/cs/k')).status).to.equal(404);
    for (const charset of ['UTF-8', '"utf-8"'])
      expect(
        (
          await c.call('PUT', '/v1/kv/cs/k', {
            body: JSON.stringify({ value: 'x', type: 'config' }),
            headers: { 'content-type': `application/json;charset=${charset}` },
          })
        ).status,
      ).to.be.oneOf([200, 201]);
  });

  it('400 for a field sent to an operation that takes no body (keyring rotate, retire), and nothing is done', async () => {
    const versions = async () => (await c.call('GET', '/v1/sys/keyring')).body.active_version;
    const before = await versions();
    for (const body of ['{"unknown":1}', `{"a":${'['.repeat(1000)}${']'.repeat(1000)}}`, '[]']) {
      const res = await c.call('POST', '/v1/sys/keyring/rotate', {
        body,
        headers: { 'content-type': 'application/json' },
      });
      expectProblem(res, 400, 'invalid_request');
    }
    expectProblem(
      await c.call('POST', '/v1/sys/keyring/retire', {
        body: '{"force":true}',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    );
    expect(await versions()).to.equal(before);
    // An empty body, or an empty object, is no field: the rotation happens.
    const rotated = await c.call('POST', '/v1/sys/keyring/rotate', {
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(rotated.status).to.equal(200);
    expect(await versions()).to.equal(before + 1);
  });

  it('400 for a "." or ".." path segment anywhere under /v1, as sent or percent-encoded, before anything is done', async () => {
    expect((await c.put('dots/k', 'kept')).status).to.equal(201);
    for (const [method, path] of [
      ['DELETE', '/v1/kv/dots/../dots/k'],
      ['DELETE', '/v1/kv/a/../../v1/sys/login-roles/x'],
      ['GET', '/v1/kv/%2e%2e/dots/k'],
      ['GET', '/v1/kv/dots/%2E/k'],
      ['POST', '/v1/sys/./keyring/rotate'],
      ['GET', '/v1/kv/dots/..'],
    ] as const) {
      const res = await c.call(method, path);
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.detail, path).to.match(/"\." or "\.\." segment/);
    }
    expect((await c.call('GET', '/v1/kv/dots/k')).body.value).to.equal('kept');
    // A name of three dots is a name.
    expect((await c.put('dots/...', 'three')).status).to.equal(201);
    expect((await c.call('GET', '/v1/kv/dots/...')).body.value).to.equal('three');
  });

  it('415 for a body with a Content-Encoding, compressed or not, and nothing is stored', async () => {
    const body = JSON.stringify({ value: 'x', type: 'config' });
    for (const encoding of ['gzip', 'deflate', 'br', 'x-unknown']) {
      const res = await c.call('PUT', '/v1/kv/enc/k', {
        body,
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
      });
      expectProblem(res, 415, 'unsupported_media_type');
      expect(res.body.detail).to.match(/does not accept compressed request bodies/);
    }
    expect((await c.call('GET', '/v1/kv/enc/k')).status).to.equal(404);
    expect(
      (
        await c.call('PUT', '/v1/kv/enc/k', {
          body,
          headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
        })
      ).status,
    ).to.equal(201);
  });

  it('answers a request Node cannot parse (a raw non-ASCII character in the URL) with a problem+json 400', async () => {
    const raw = await rawExchange(
      c.url,
      Buffer.concat([
        Buffer.from('GET /v1/kv/caf'),
        Buffer.from([0xc3, 0xa9]),
        Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
      ]),
    );
    expect(raw).to.match(/^HTTP\/1\.1 400 /);
    expect(raw).to.match(/content-type: application\/problem\+json/i);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    expect(body).to.include({ status: 400, code: 'invalid_request' });
    expect(body.errors).to.have.length(1);
  });

  it('lists errors[] on every 400: a repeated query parameter, the reserved key name, a parameter that does not apply', async () => {
    await c.put('e400/k', 'v', 'config');
    for (const [method, path, field] of [
      ['GET', '/v1/kv/e400/k?version=1&version=1', 'version'],
      ['PUT', '/v1/kv/e400/versions', '/1'],
      ['GET', '/v1/kv/e400/k?version=1&cursor=abc', 'cursor'],
      ['GET', '/v1/kv/e400/k?version=1&limit=5', 'limit'],
      ['GET', '/v1/kv/e400/?version=1', 'version'],
      ['GET', '/v1/kv/e400/k/versions?version=1', 'version'],
    ] as const) {
      const res = await c.call(
        method,
        path,
        method === 'PUT' ? { json: { value: 'v', type: 'config' } } : {},
      );
      expectProblem(res, 400, 'invalid_request');
      expect(res.body.errors, `${method} ${path}`).to.be.an('array').with.length.at.least(1);
      expect(res.body.errors[0].field, `${method} ${path}`).to.equal(field);
    }
  });

  it('drops a slow request body after COFFER_REQUEST_TIMEOUT seconds with 408', async function () {
    this.timeout(20_000);
    const slow = await startTestCoffer({ env: { COFFER_REQUEST_TIMEOUT: '2' } });
    try {
      const started = performance.now();
      const head = `PUT /v1/kv/slow/k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slow.rootToken}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"value":`;
      const raw = await rawExchange(slow.url, Buffer.from(head));
      const seconds = (performance.now() - started) / 1000;
      expect(raw).to.match(/^HTTP\/1\.1 408 /);
      expect(seconds).to.be.within(1.5, 6);
      expect((await slow.call('GET', '/v1/kv/slow/k')).status).to.equal(404);
    } finally {
      await slow.close();
    }
  });

  it('names at most ten unknown query parameters, and how many there were', async () => {
    const query = Array.from({ length: 1800 }, (_, i) => `p${i}=1`).join('&');
    const res = await c.call('GET', `/v1/kv/e400/k?${query}`);
    expectProblem(res, 400, 'invalid_request');
    expect(res.body.errors).to.have.length(10);
    expect(res.body.detail).to.match(/and 1790 more \(1800 in all\)$/);
    expect(res.text.length).to.be.below(2000);
  });

  it('400 for malformed JSON, an empty body, and a non-object body, without echoing the body', async () => {
    const secretish = '{"value": "do-not-echo-me", "type": ';
    const bad = await c.call('PUT', '/v1/kv/j/k', {
      body: secretish,
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(bad, 400, 'invalid_request');
    expect(bad.text).to.not.include('do-not-echo-me');
    expectProblem(
      await c.call('PUT', '/v1/kv/j/k', { headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_request',
    );
    expectProblem(
      await c.call('PUT', '/v1/kv/j/k', {
        body: '"str"',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    );
    expect((await c.call('GET', '/v1/kv/j/k')).status).to.equal(404);
  });

  it('405 with Allow for a known path and a wrong method; 404 for an unknown path', async () => {
    const res = await c.call('OPTIONS', '/v1/kv/a/b');
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).to.equal('GET, PUT, DELETE, POST, PATCH');
    // Where no key can be named, the kv path serves GET alone, as the document lists it.
    for (const path of [
      '/v1/kv',
      '/v1/kv/a',
      '/v1/kv/a%2Fb',
      '/v1/kv/a/b/',
      '/v1/kv/a/b/versions',
    ]) {
      const there = await c.call('OPTIONS', path);
      expectProblem(there, 405, 'method_not_allowed');
      expect(there.headers.get('allow'), path).to.equal('GET');
    }
    expect((await c.call('PUT', '/v1/auth/me')).headers.get('allow')).to.equal('GET');
    expectProblem(await c.call('GET', '/v1/auth/token'), 405, 'method_not_allowed');
    expectProblem(await c.call('GET', '/v1/nope'), 404, 'not_found');
    expectProblem(await c.call('GET', '/elsewhere', { token: null }), 404, 'not_found');
  });

  it('routes before it authenticates: an unknown path is 404 and an unlisted method 405 with Allow, with no token or a wrong one', async () => {
    for (const token of [null, `cfr_${'A'.repeat(16)}_${'B'.repeat(43)}`]) {
      expectProblem(await c.call('GET', '/v1/no/such/thing', { token }), 404, 'not_found');
      const wrong = await c.call('DELETE', '/v1/sys/keyring', { token });
      expectProblem(wrong, 405, 'method_not_allowed');
      expect(wrong.headers.get('allow')).to.equal('GET');
      // A path that exists and a method it serves: the token decides.
      expectProblem(await c.call('GET', '/v1/sys/keyring', { token }), 401, 'unauthorized');
    }
  });

  it('400 for an empty namespace path (GET /v1/kv/ lists the top-level namespaces: test/kv/listing.test.ts)', async () => {
    expectProblem(
      await c.call('PUT', '/v1/kv/', { json: { value: 'v', type: 'config' } }),
      400,
      'invalid_request',
    );
    expectProblem(await c.call('GET', '/v1/kv/?version=1'), 400, 'invalid_request');
  });

  it('sends security headers and no-store on every response', async () => {
    const res = await c.call('GET', '/v1/auth/me');
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(res.headers.get('content-security-policy')).to.equal(
      "default-src 'none';frame-ancestors 'none'",
    );
    expect(res.headers.get('x-frame-options')).to.equal('DENY');
    expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
    // HSTS only over TLS (test/startup.test.ts checks it there).
    expect(res.headers.get('strict-transport-security')).to.equal(null);
    expect(res.headers.get('x-powered-by')).to.equal(null);
    expect(
      (await c.call('GET', '/v1/openapi.json', { token: null })).headers.get('cache-control'),
    ).to.equal('no-store');
  });

  it('sends them on every kind of response: HEAD and OPTIONS (405), 404 outside /v1, 401, 204, and / redirecting to the console', async () => {
    await c.put('hdr/k', 'v', 'config');
    const responses = [
      await c.call('HEAD', '/v1/kv/hdr/k'),
      await c.call('OPTIONS', '/v1/kv/hdr/k'),
      await c.call('GET', '/favicon.ico', { token: null }),
      await c.call('GET', '/v1/kv/hdr/k', { token: null }),
      await c.call('DELETE', '/v1/kv/hdr/k'),
      await c.call('GET', '/', { token: null }),
    ];
    expect(responses.map((r) => r.status)).to.deep.equal([405, 405, 404, 401, 204, 302]);
    // The server's own address opens the web console.
    expect(responses[5]!.headers.get('location')).to.equal('/ui/');
    for (const res of responses) {
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(res.headers.get('x-powered-by')).to.equal(null);
    }
    // The console's own files, as README says: revalidated at each load, not audited (no request id).
    for (const path of ['/ui/', '/ui/index.html']) {
      const file = await c.call('GET', path, { token: null });
      expect(file.status, path).to.equal(200);
      expect(file.headers.get('cache-control'), path).to.equal('no-cache');
      expect(file.headers.get('x-request-id'), path).to.equal(null);
    }
    expect(responses[3]!.headers.get('x-request-id')).to.match(/^[A-Za-z0-9]{16}$/);
    // HEAD is not served (the document lists no HEAD): 405, with no body, and Allow naming the methods.
    expect(responses[0]!.text).to.equal('');
    expect(responses[0]!.headers.get('allow')).to.equal('GET, PUT, DELETE, POST, PATCH');
  });
});
