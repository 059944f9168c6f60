/**
 * The response checker: every answer the HTTP tests receive under /v1 (through the harness's call and
 * http-client's send) is held against the OpenAPI document of this build (src/features.ts, the
 * document the server publishes): its status must be documented for the operation, its content type must be
 * the documented one, its body must be valid against the documented schema (closed objects: no field the
 * document does not name), every header the response requires must be there, and a header clients act on
 * (ETag, Retry-After, WWW-Authenticate, Allow) may come only where it is declared. A drift throws, so the test
 * that received the answer fails the day a route drifts from its schema.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { apiDocument } from '../../src/features.js';

export interface Answer {
  readonly method: string;
  /** The request's path as sent, with its query. */
  readonly path: string;
  readonly status: number;
  readonly header: (name: string) => string | undefined;
  readonly text: string;
}

interface Documented {
  readonly document: ApiDocument;
  readonly templates: readonly Template[];
  readonly ajv: Ajv2020;
  readonly validators: Map<string, ValidateFunction>;
}

interface Template {
  readonly path: string;
  readonly pattern: RegExp;
  /** The characters outside its parameters: the more, the more specific. */
  readonly literal: number;
  /** The part before its first parameter. */
  readonly prefix: string;
  readonly methods: ReadonlySet<string>;
}

interface ApiDocument {
  readonly paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  readonly components: { responses: Record<string, unknown>; headers: Record<string, unknown> };
}

interface Response {
  readonly description: string;
  readonly headers?: Record<string, unknown>;
  readonly content?: Record<string, { schema: unknown }>;
}

interface Header {
  readonly required?: boolean;
  readonly schema: { type?: string; const?: string };
}

/** Headers a client acts on: sent only where the document declares them. */
const CONTRACT_HEADERS = ['etag', 'retry-after', 'www-authenticate', 'allow'];

export class ContractError extends Error {
  override readonly name = 'ContractError';
}

let documented: Documented | undefined;

function load(): Documented {
  if (documented) return documented;
  const document = apiDocument(86_400) as ApiDocument;
  // strict: false, because the document holds OpenAPI's own members beside the schemas; the schemas are
  // strict by being closed, which test/http/response-contract.test.ts checks of every one.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat('date-time', (text: string) =>
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(text),
  );
  ajv.addSchema(document, 'api');
  const templates = Object.entries(document.paths).map(([path, item]) => {
    const source = path
      .split(/(\{[a-z_]+\})/)
      .map((part) =>
        part === '{namespace}'
          ? '(.+)'
          : part.startsWith('{')
            ? '([^/]+)'
            : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'),
      )
      .join('');
    return {
      path,
      pattern: new RegExp(`^${source}$`),
      literal: path.replace(/\{[a-z_]+\}/g, '').length,
      prefix: path.split('{')[0]!,
      methods: new Set(Object.keys(item).map((m) => m.toUpperCase())),
    };
  });
  templates.sort((a, b) => b.literal - a.literal);
  documented = { document, templates, ajv, validators: new Map() };
  return documented;
}

const pointer = (parts: readonly string[]) =>
  `api#/${parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;

/** `value`, or what its `$ref` (a local pointer: #/components/...) names in `doc`. */
export function resolve<T>(doc: object, value: unknown): T {
  const ref = (value as { $ref?: string }).$ref;
  if (ref === undefined) return value as T;
  return ref
    .slice(2)
    .split('/')
    .reduce<unknown>((at, part) => (at as Record<string, unknown>)[part], doc) as T;
}

function fail(answer: Answer, why: string): never {
  // A revocation's path may hold a whole token: never in a failure's message.
  const path = answer.path.replace(/^\/v1\/auth\/token\/[^?]+/, '/v1/auth/token/{token}');
  throw new ContractError(
    `${answer.method} ${path} answered ${answer.status}, which the OpenAPI document does not allow: ${why}`,
  );
}

/** Checks `answer` against the document; throws a ContractError saying what differs. */
export function checkAnswer(answer: Answer): void {
  const path = answer.path.split('?')[0]!;
  if (!path.startsWith('/v1/')) return;
  // Vault's event subscription, served under /v1 too for the Vault Secrets Operator (it keeps only its
  // Vault address's host): Vault's dialect, not Coffer's document (kv/routes/vault-events.ts).
  if (path.startsWith('/v1/sys/events/subscribe/')) return;
  const api = load();
  const { document } = api;
  // A trailing slash marks a listing: /v1/kv/ is the document's /v1/kv.
  let matching = api.templates.filter((t) => t.pattern.test(path));
  if (matching.length === 0 && path.endsWith('/'))
    matching = api.templates.filter((t) => t.pattern.test(path.slice(0, -1)));
  const template = matching.find((t) => t.methods.has(answer.method));
  if (template === undefined) {
    checkUnrouted(api, answer, path, matching);
    return;
  }
  const operation = document.paths[template.path]![answer.method.toLowerCase()]!;
  const declared = operation.responses[String(answer.status)];
  if (declared === undefined)
    fail(
      answer,
      `${answer.method} ${template.path} documents ${Object.keys(operation.responses).join(', ')}`,
    );
  const response = resolve<Response>(document, declared);
  const ref = (declared as { $ref?: string }).$ref;
  const at = ref
    ? ref.slice(2).split('/')
    : ['paths', template.path, answer.method.toLowerCase(), 'responses', String(answer.status)];
  checkHeaders(api, answer, response);
  checkBody(api, answer, response, at);
}

/** An answer for a path and method no operation documents: 405 with Allow, or a problem before routing. */
function checkUnrouted(
  api: Documented,
  answer: Answer,
  path: string,
  matching: readonly Template[],
): void {
  const problem = resolve<Response>(api.document, api.document.components.responses.Problem);
  if (answer.status === 405) {
    if (matching.length === 0) fail(answer, 'a 405 for a path no operation serves');
    if (!answer.header('allow')) fail(answer, 'a 405 without Allow');
    checkBody(api, answer, problem, ['components', 'responses', 'Problem']);
    return;
  }
  // Routing comes before authentication: an unknown path is 404 with a token or without (429 and 503 may
  // come first); a path that no template of this method matches but that starts like one (PUT
  // /v1/kv/one-segment) is refused as a request (400), after authentication (401).
  const routedElsewhere = api.templates.some(
    (t) => t.methods.has(answer.method) && `${path}/`.startsWith(t.prefix),
  );
  // A "." or ".." segment is refused as a request wherever it is (info.description says so).
  const dotted = /\/(?:\.|%2e){1,2}(?:\/|$)/i.test(path);
  const allowed = [
    404,
    429,
    503,
    ...(routedElsewhere ? [400, 401, 403, 413, 415] : dotted ? [400] : []),
  ];
  if (!allowed.includes(answer.status))
    fail(
      answer,
      `no operation serves ${answer.method} here, so only ${allowed.join(', ')} may answer`,
    );
  checkBody(api, answer, problem, ['components', 'responses', 'Problem']);
}

function checkHeaders(api: Documented, answer: Answer, response: Response): void {
  const declared = new Map(
    Object.entries(response.headers ?? {}).map(([name, h]) => [
      name.toLowerCase(),
      resolve<Header>(api.document, h),
    ]),
  );
  for (const [name, header] of declared) {
    const value = answer.header(name);
    if (value === undefined) {
      if (header.required) fail(answer, `the required header ${name} is missing`);
      continue;
    }
    if (header.schema.const !== undefined && value !== header.schema.const)
      fail(answer, `${name} is "${value}", not "${header.schema.const}"`);
    if (header.schema.type === 'integer' && !/^\d+$/.test(value))
      fail(answer, `${name} is "${value}", not an integer`);
  }
  for (const name of CONTRACT_HEADERS) {
    if (answer.header(name) !== undefined && !declared.has(name))
      fail(answer, `it sends ${name}, which this response does not declare`);
  }
}

function checkBody(
  api: Documented,
  answer: Answer,
  response: Response,
  at: readonly string[],
): void {
  const content = response.content;
  // A HEAD's answer has no body whatever its status.
  if (answer.method === 'HEAD' || content === undefined) {
    if (answer.text !== '') fail(answer, 'a body where the document declares none');
    return;
  }
  const type = (answer.header('content-type') ?? '').split(';')[0]!.trim();
  if (!(type in content))
    fail(
      answer,
      `content type "${type}" where the document declares ${Object.keys(content).join(', ')}`,
    );
  let body: unknown;
  // A text answer (Prometheus' metrics) is its text, checked against a string schema.
  if (type === 'text/plain') body = answer.text;
  else
    try {
      body = JSON.parse(answer.text);
    } catch {
      fail(answer, 'a body that is not JSON');
    }
  const ref = pointer([...at, 'content', type, 'schema']);
  let validate = api.validators.get(ref);
  if (validate === undefined) {
    validate = api.ajv.compile({ $ref: ref });
    api.validators.set(ref, validate);
  }
  if (!validate(body)) {
    const errors = (validate.errors ?? [])
      .slice(0, 5)
      .map(
        (e) =>
          `${e.instancePath || '(body)'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
      );
    fail(answer, `the body does not match its schema: ${errors.join('; ')}`);
  }
}
