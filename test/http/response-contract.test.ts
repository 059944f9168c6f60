import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { configDefaults } from '../../src/config/schema.js';
import { apiDocument, documentText } from '../../src/features.js';
import { type Answer, ContractError, checkAnswer } from '../support/api-contract.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

interface Schema {
  readonly type?: string | string[];
  readonly properties?: Record<string, Schema>;
  readonly required?: string[];
  readonly additionalProperties?: boolean | Schema;
  readonly description?: string;
  readonly items?: Schema;
  readonly anyOf?: Schema[];
  readonly oneOf?: Schema[];
}

/** Every object schema under `schema`, with where it is. */
function objectSchemas(schema: Schema, at: string): { at: string; schema: Schema }[] {
  const found: { at: string; schema: Schema }[] = [];
  if (schema.type === 'object') found.push({ at, schema });
  for (const [name, s] of Object.entries(schema.properties ?? {}))
    found.push(...objectSchemas(s, `${at}.${name}`));
  if (schema.items) found.push(...objectSchemas(schema.items, `${at}[]`));
  for (const [i, s] of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].entries())
    found.push(...objectSchemas(s, `${at}|${i}`));
  return found;
}

describe('the API contract: answers against the OpenAPI document', () => {
  let c: TestCoffer;
  before(async () => {
    c = await startTestCoffer();
  });
  after(async () => {
    await c.close();
  });

  it('is the document the server publishes, and docs/openapi.json is that document with the default settings', async () => {
    const served = await c.call('GET', '/v1/openapi.json', { token: null });
    expect(served.body).to.deep.equal(JSON.parse(JSON.stringify(apiDocument(c.config.max_ttl))));
    expect(readFileSync(`${REPO}docs/openapi.json`, 'utf8')).to.equal(
      documentText(configDefaults().max_ttl as number),
      'docs/openapi.json is out of date: npm run docs:openapi',
    );
  });

  it('says of every answer object what is always there, and closes it (the audit entry is open on purpose and says why)', () => {
    const doc = JSON.parse(JSON.stringify(apiDocument(86_400))) as {
      components: { schemas: Record<string, Schema> };
    };
    const loose: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      for (const { at, schema: object } of objectSchemas(schema, name)) {
        const open =
          object.additionalProperties === true && /^Open:/.test(object.description ?? '');
        // A map's values are typed (additionalProperties is a schema) and it says it is one.
        const map =
          typeof object.additionalProperties === 'object' && /^Map:/.test(object.description ?? '');
        if (object.additionalProperties !== false && !open && !map) loose.push(`${at}: not closed`);
        // An object with no field always there says when its fields come.
        if (object.required === undefined && !map && !/only when/.test(object.description ?? ''))
          loose.push(`${at}: no required list`);
      }
    }
    expect(loose).to.deep.equal([]);
    expect(Object.keys(doc.components.schemas)).to.include.members([
      'Self',
      'Capability',
      'TokenMetadata',
      'CreatedToken',
      'SealReport',
      'AuditVerification',
    ]);
  });

  describe('the checker fires on a wrong answer', () => {
    /** A real answer, as the checker is given it. */
    async function answer(method: string, path: string, json?: unknown): Promise<Answer> {
      const res = await c.call(method, path, json === undefined ? {} : { json });
      return {
        method,
        path,
        status: res.status,
        header: (name) => res.headers.get(name) ?? undefined,
        text: res.text,
      };
    }
    const withBody = (a: Answer, change: (body: Record<string, unknown>) => void): Answer => {
      const body = JSON.parse(a.text) as Record<string, unknown>;
      change(body);
      return { ...a, text: JSON.stringify(body) };
    };
    const fires = (a: Answer, why: RegExp): void => {
      expect(() => checkAnswer(a)).to.throw(ContractError, why);
    };

    it('a field the document does not name, a missing one, one of the wrong type', async () => {
      const me = await answer('GET', '/v1/auth/me');
      expect(() => checkAnswer(me)).not.to.throw();
      fires(
        withBody(me, (b) => {
          b.extra = 1;
        }),
        /must NOT have additional properties \(extra\)/,
      );
      fires(
        withBody(me, (b) => {
          delete b.capabilities;
        }),
        /must have required property 'capabilities'/,
      );
      fires(
        withBody(me, (b) => {
          (b.capabilities as { actions: string[] }[])[0]!.actions = ['fly'];
        }),
        /capabilities\/0\/actions\/0 must be equal to one of the allowed values/,
      );
      const created = await answer('POST', '/v1/auth/token', { role: 'reader' });
      expect(created.status).to.equal(201);
      fires(
        withBody(created, (b) => {
          b.status = 'active';
        }),
        /additional properties \(status\)/,
      );
    });

    it('says what differs without the token a revocation path may hold', () => {
      const value = 'cfr_NotARealTokenButShapedLikeOne_0123456789';
      const revoke: Answer = {
        method: 'DELETE',
        path: `/v1/auth/token/${value}`,
        status: 418,
        header: () => undefined,
        text: '',
      };
      expect(() => checkAnswer(revoke)).to.throw(
        ContractError,
        /DELETE \/v1\/auth\/token\/\{token\}/,
      );
      expect(() => checkAnswer(revoke))
        .to.throw(ContractError)
        .that.satisfies((err: Error) => !err.message.includes(value));
    });

    it('a status, a content type or a header the document does not declare, and a required header missing', async () => {
      await c.put('contract/k', 'v', 'config');
      const read = await answer('GET', '/v1/kv/contract/k');
      expect(() => checkAnswer(read)).not.to.throw();
      fires({ ...read, status: 418 }, /documents 200, 304, 400, 401/);
      fires(
        { ...read, header: (n) => (n === 'content-type' ? 'text/plain' : read.header(n)) },
        /content type "text\/plain"/,
      );
      fires(
        { ...read, header: (n) => (n === 'x-request-id' ? undefined : read.header(n)) },
        /required header x-request-id is missing/,
      );
      const listing = await answer('GET', '/v1/kv/contract/');
      fires(
        { ...listing, header: (n) => (n === 'allow' ? 'GET' : listing.header(n)) },
        /sends allow, which this response does not declare/,
      );
      fires({ ...listing, method: 'OPTIONS', status: 400 }, /no operation serves OPTIONS here/);
      const res = await c.call('GET', '/v1/auth/me', { token: null });
      const denied: Answer = {
        method: 'GET',
        path: '/v1/auth/me',
        status: res.status,
        header: (n) => (n === 'www-authenticate' ? undefined : (res.headers.get(n) ?? undefined)),
        text: res.text,
      };
      fires(denied, /answered 401, .*required header www-authenticate is missing/);
    });
  });
});
