import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Request } from 'express';
import { flag, integer, parsed, text } from '../../src/api/query-params.js';
import { Validators } from '../../src/api/validate.js';
import { AppError } from '../../src/errors.js';

/** The checkout (dist/test/api/../../..). */
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

const DECLARED = {
  limit: integer({ minimum: 1, maximum: 100 }),
  all: flag(),
  order: text({ enum: ['oldest', 'newest'] }),
  prefix: text({ pattern: '^[a-z]{1,8}$', invalid: 'must be 1 to 8 of a-z' }),
  timeout: parsed({ pattern: '^[0-9]{1,3}s$', parse: (t) => Number(t.slice(0, -1)) * 1000 }),
};

const reader = new Validators().query(DECLARED);
const read = (query: string) => reader({ originalUrl: `/v1/x?${query}` } as Request);

function refusal(query: string): { detail: string; field: string } {
  try {
    read(query);
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    const e = err as AppError;
    expect(e.code).to.equal('invalid_request');
    return { detail: e.message, field: String(e.issues?.[0]?.field) };
  }
  throw new Error(`${query} was not refused`);
}

/** Every file of src/ under a folder named routes/ (the features' operations). */
function routeFiles(dir = join(REPO, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return routeFiles(path);
    return /\/routes\/[^/]+\.ts$/.test(path) ? [path] : [];
  });
}

describe('query parameters, as operations declare them (api/query-params.ts)', () => {
  it('are handed to the handler typed: integers as numbers, flags as booleans, a parsed value as its parse gives it', () => {
    expect(read('limit=25&all=true&order=newest&prefix=ab&timeout=30s')).to.deep.equal({
      limit: 25,
      all: true,
      order: 'newest',
      prefix: 'ab',
      timeout: 30_000,
    });
    expect(read('all=false')).to.deep.equal({ all: false });
    expect(read('')).to.deep.equal({});
  });

  it('refuses a value its schema refuses with 400 naming the parameter, in the words of its schema or its declaration', () => {
    expect(refusal('limit=0')).to.deep.equal({
      detail: 'limit must be an integer from 1 to 100',
      field: 'limit',
    });
    expect(refusal('limit=1e2').detail).to.equal('limit must be an integer from 1 to 100');
    expect(refusal('limit=-1').detail).to.equal('limit must be an integer from 1 to 100');
    expect(refusal('limit=01').detail).to.equal('limit must be an integer from 1 to 100');
    expect(refusal('all=yes').detail).to.equal('all must be true or false');
    expect(refusal('order=random').detail).to.equal('order must be oldest or newest');
    expect(refusal('prefix=ABC').detail).to.equal('prefix must be 1 to 8 of a-z');
    expect(refusal('timeout=30m').detail).to.equal('timeout must match ^[0-9]{1,3}s$');
    expect(refusal('other=1').detail).to.equal('unknown query parameter: "other"');
    expect(refusal('limit=1&limit=2').detail).to.equal('query parameter "limit" is repeated');
  });

  it('are never parsed by hand in a route: no handler reads the text of a declared parameter', () => {
    const files = routeFiles();
    expect(files.length).to.be.greaterThan(10);
    // What reading a parameter's text by hand looks like; the dispatcher does it from the declaration.
    const byHand = [
      /\bNumber\((q|query)\./,
      /\bparseInt\(/,
      /\b(q|query)\.\w+ === '(true|false)'/,
      /\.test\((q|query)\./,
      /\b(positiveInteger|booleanFlag|queryOf)\(/,
    ];
    const found = files.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          byHand.some((p) => p.test(line))
            ? [`${relative(REPO, file)}:${i + 1}: ${line.trim()}`]
            : [],
        ),
    );
    expect(found).to.deep.equal([]);
    // The patterns find what they are meant to.
    for (const line of [
      'const n = Number(q.limit);',
      "if (query.all === 'true')",
      '/^\\d+$/.test(q.cas)',
    ])
      expect(
        byHand.some((p) => p.test(line)),
        line,
      ).to.equal(true);
  });
});
