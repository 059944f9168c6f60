/**
 * Values, names and metadata come back exactly as written, or are refused: property-based, over arbitrary
 * strings, through the HTTP API.
 */
import { request } from 'node:http';
import { expect } from 'chai';
import fc from 'fast-check';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

/** Any UTF-16 string, lone surrogates included. */
const anyUtf16 = fc.string({
  unit: fc.nat(0xffff).map((unit) => String.fromCharCode(unit)),
  maxLength: 64,
});
/** Any valid Unicode string (every code point, astral ones as pairs). */
const anyUnicode = fc.string({ unit: 'binary', maxLength: 64 });
const hasLoneSurrogate = (text: string): boolean => /\p{Cs}/u.test(text);
/** A string that certainly holds a lone surrogate somewhere. */
const illFormed = fc
  .tuple(anyUtf16, fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff'), anyUtf16)
  .map(([a, lone, b]) => `${a}${lone}${b}`)
  .filter(hasLoneSurrogate);

describe('values round-trip exactly, or are refused', function () {
  this.timeout(120_000);
  let c: TestCoffer;
  let n = 0;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c.close();
  });

  it('stores every valid Unicode string byte for byte, as a secret and as a config value', async () => {
    await fc.assert(
      fc.asyncProperty(
        anyUnicode,
        fc.constantFrom('secret', 'config'),
        fc.boolean(),
        async (text, type, bom) => {
          const value = bom ? `\ufeff${text}` : text;
          const path = `rt/${type}/k${n++}`;
          expect((await c.put(path, value, type as 'secret' | 'config')).status).to.equal(201);
          const read = await c.call('GET', `/v1/kv/${path}`);
          expect(read.status).to.equal(200);
          expect(Buffer.from(read.body.value, 'utf8').equals(Buffer.from(value, 'utf8'))).to.equal(
            true,
          );
          expect(read.body.value).to.equal(value);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps a leading U+FEFF and astral characters in a secret', async () => {
    for (const value of [
      '\ufeff',
      '\ufeffhunter2',
      '\ufeff\ufeffx',
      'pass\u{1f511}word',
      '\u0000nul',
    ]) {
      const path = `rt/bom/k${n++}`;
      expect((await c.put(path, value)).status).to.equal(201);
      expect((await c.call('GET', `/v1/kv/${path}`)).body.value).to.equal(value);
    }
  });

  it('refuses a value with a lone surrogate with 400 naming /value, and stores nothing', async () => {
    await fc.assert(
      fc.asyncProperty(illFormed, fc.constantFrom('secret', 'config'), async (value, type) => {
        const path = `rt/bad/k${n++}`;
        const res = await c.put(path, value, type as 'secret' | 'config');
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('invalid_request');
        expect(res.body.errors).to.deep.equal([
          {
            field: '/value',
            in: 'body',
            message: 'is not valid Unicode (it holds a lone surrogate, e.g. \\ud800)',
          },
        ]);
        expect((await c.call('GET', `/v1/kv/${path}`)).status).to.equal(404);
      }),
      { numRuns: 60 },
    );
    // The seal report finds nothing to complain about.
    const report = await c.call('GET', '/v1/sys/seal-report?verify=true');
    expect(report.body.anomalies).to.deep.equal([]);
  });

  it('refuses token metadata with a lone surrogate, naming the field, and keeps valid metadata exactly', async () => {
    await fc.assert(
      fc.asyncProperty(illFormed, fc.constantFrom('name', 'description'), async (text, field) => {
        const res = await c.call('POST', '/v1/auth/token', {
          json: { role: 'reader', metadata: { [field]: text.slice(0, 100) } },
        });
        expect(res.status).to.equal(400);
        expect(res.body.errors[0].field).to.equal(`/metadata/${field}`);
      }),
      { numRuns: 30 },
    );
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 100 }), async (name) => {
        const created = await c.call('POST', '/v1/auth/token', {
          json: { role: 'reader', metadata: { name } },
        });
        expect(created.status).to.equal(201);
        const me = await c.call('GET', '/v1/auth/me', { token: created.body.token });
        expect(me.body.metadata.name).to.equal(name);
      }),
      { numRuns: 20 },
    );
  });

  it('refuses a lone surrogate in a member name, and a body whose bytes are not UTF-8', async () => {
    const member = await c.call('PUT', '/v1/kv/rt/member', {
      body: '{"value":"x","type":"secret","\\ud800":1}',
      headers: { 'content-type': 'application/json' },
    });
    expect(member.status).to.equal(400);
    expect(member.body.errors[0].message).to.match(/member name that is not valid Unicode/);
    const bytes = Buffer.concat([
      Buffer.from('{"value":"a'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","type":"config"}'),
    ]);
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${c.url}/v1/kv/rt/latin`,
        {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${c.rootToken}`,
            'content-type': 'application/json',
            'content-length': bytes.length,
          },
        },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.end(bytes);
    });
    expect(status.status).to.equal(400);
    expect(JSON.parse(status.body).detail).to.equal('the request body is not valid UTF-8');
    expect((await c.call('GET', '/v1/kv/rt/latin')).status).to.equal(404);
  });

  it('refuses query values whose percent-escapes are not UTF-8 instead of reading them as U+FFFD', async () => {
    for (const query of ['prefix=%ED%A0%80', 'prefix=%FF', 'prefix=%E2%82']) {
      const res = await c.call('GET', `/v1/sys/audit?${query}`);
      expect(res.status).to.equal(400);
      expect(res.body.errors[0]).to.include({ field: 'prefix', in: 'query' });
    }
  });
});
