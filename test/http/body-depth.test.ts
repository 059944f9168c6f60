import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../src/api/json-depth.js';
import { send, sendText } from '../support/http-client.js';
import { type CofferProcess, serveSettings, startProcess, workerPids } from '../support/process.js';

const nested = (depth: number, inner = '"x"'): string =>
  `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('request bodies: nesting', () => {
  it('counts arrays and objects inside one another, not brackets inside strings', () => {
    const bytes = (text: string) => Buffer.from(text);
    expect(nestsDeeperThan(bytes(nested(MAX_JSON_DEPTH)))).to.equal(false);
    expect(nestsDeeperThan(bytes(nested(MAX_JSON_DEPTH + 1)))).to.equal(true);
    expect(nestsDeeperThan(bytes(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`))).to.equal(false);
    expect(nestsDeeperThan(bytes(`{"a":${nested(MAX_JSON_DEPTH)}}`))).to.equal(true);
    // Siblings do not add up; brackets in strings (escaped quotes included) are text.
    expect(nestsDeeperThan(bytes(`[${Array(1000).fill('[]').join(',')}]`))).to.equal(false);
    expect(nestsDeeperThan(bytes(JSON.stringify({ v: '['.repeat(10_000) })))).to.equal(false);
    expect(nestsDeeperThan(bytes(JSON.stringify({ v: `\\"${'{'.repeat(100)}` })))).to.equal(false);
  });

  describe('a server with one worker, under bodies from anyone who may write', function () {
    this.timeout(120_000);
    let p: CofferProcess;
    let root: string;
    let writer: string;
    let worker: number;

    before(async () => {
      const settings = serveSettings(1);
      root = settings.root;
      p = await startProcess(settings.env);
      worker = workerPids(p.child.pid!)[0]!;
      writer = (await send(p.url, 'POST', '/v1/auth/token', root, { role: 'writer' })).body.token;
    });
    after(async () => {
      if (p.child.exitCode === null) await p.stop();
    });

    /** The worker is the one that started, and it answers. */
    async function stillServing(): Promise<void> {
      expect(workerPids(p.child.pid!)).to.deep.equal([worker]);
      expect((await send(p.url, 'GET', '/v1/sys/health', root)).status).to.equal(200);
    }

    it('answers 400 to a PUT nesting 8,000 arrays, and the worker keeps running', async () => {
      for (let i = 0; i < 5; i++) {
        const body = `{"value":"x","type":"config","a":${nested(8000)}}`;
        const res = await sendText(p.url, 'PUT', '/v1/kv/deep/k', writer, body);
        expect(res.status).to.equal(400);
        expect(res.body.code).to.equal('invalid_request');
        expect(res.body.detail).to.contain(`more than ${MAX_JSON_DEPTH} deep`);
      }
      await stillServing();
      expect((await send(p.url, 'GET', '/v1/kv/deep/k', root)).status).to.equal(404);
    });

    it('answers 400 to token metadata nesting 8,000 objects', async () => {
      const deep = `${'{"a":'.repeat(8000)}1${'}'.repeat(8000)}`;
      const res = await sendText(
        p.url,
        'POST',
        '/v1/auth/token',
        root,
        `{"role":"reader","metadata":${deep}}`,
      );
      expect(res.status).to.equal(400);
      await stillServing();
    });

    it('answers every fuzzed body of every operation that takes one with a 4xx or a success, never a 5xx', async () => {
      const doc = (await send(p.url, 'GET', '/v1/openapi.json', root)).body as {
        paths: Record<string, Record<string, { requestBody?: unknown }>>;
      };
      // Every operation that takes a body, with its path filled in.
      const targets = Object.entries(doc.paths).flatMap(([template, methods]) =>
        Object.entries(methods)
          .filter(([, op]) => op?.requestBody !== undefined)
          .map(([method, op]) => ({
            method: method.toUpperCase(),
            path: template.replace('{namespace}', 'fuzz').replace(/\{[^}]+\}/g, 'k'),
            op,
          })),
      );
      expect(targets.map((t) => `${t.method} ${t.path}`)).to.include.members([
        'PUT /v1/kv/fuzz/k',
        'POST /v1/auth/token',
      ]);
      // Member names the bodies really use (so validation gets past the first check), and any others.
      const name = fc.oneof(
        fc.constantFrom('value', 'type', 'role', 'scopes', 'metadata', 'expires_in', 'batch_size'),
        fc.string({ maxLength: 8 }),
      );
      const json = fc.letrec((tie) => ({
        value: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          fc.constantFrom<unknown>(null, true, false, 'config', 'secret', 'reader', '\ud800'),
          fc.double(),
          fc.integer(),
          fc.string(),
          fc.array(tie('value'), { maxLength: 4 }),
          fc.dictionary(name, tie('value'), { maxKeys: 5 }),
        ),
      })).value;
      const text = fc.oneof(
        json.map((v) => JSON.stringify(v)),
        fc
          .tuple(fc.integer({ min: 1, max: 20_000 }), fc.constantFrom('[', '{"a":'))
          .map(([depth, open]) => `{"value":"x","type":"config","d":${open.repeat(depth)}`),
        fc.integer({ min: 1, max: 20_000 }).map((depth) => nested(depth)),
        fc.string({ unit: 'binary', maxLength: 64 }),
      );
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...targets), text, async (target, body) => {
          const res = await sendText(p.url, target.method, target.path, root, body);
          expect(res.status, `${target.method} ${target.path} ${body.slice(0, 80)}`).to.be.below(
            500,
          );
        }),
        { numRuns: 300 },
      );
      await stillServing();
    });
  });
});
