import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser';
import { tempDir } from './support/temp-dirs.js';

/** The checkout (dist/test/.. /..). */
const REPO = fileURLToPath(new URL('../..', import.meta.url));

/**
 * What each part of src/ may import of the others (docs/architecture.md, "Layers"): its own files, and the
 * parts listed. A part is a folder, or a file directly in src/. Storage is reached only through the store.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  errors: [],
  model: [],
  'bounded-cache': [],
  processes: [],
  version: [],
  'build-stamp': [],
  // The build step that bundles the web console; the console itself (src/ui) runs in the browser and
  // reaches the server through its API only.
  'build-ui': [],
  // model/: plain declarations it shares with the server (the audit search's filters); api/: the answers'
  // types, as types only. Its TSX files are read by esbuild, not here (the console's bundle, below).
  ui: ['api', 'model'],
  directories: ['errors'],
  storage: [],
  crypto: ['model'],
  keys: ['crypto', 'directories', 'errors'],
  store: ['storage', 'crypto', 'keys', 'model', 'bounded-cache', 'errors'],
  auth: ['store', 'crypto', 'model', 'bounded-cache', 'errors'],
  // The store seals what kv writes and opens what it reads: kv holds no envelope, no key (issue #39).
  kv: ['auth', 'store', 'model', 'errors'],
  audit: ['store', 'crypto', 'model', 'bounded-cache', 'processes', 'errors'],
  operator: ['audit', 'store', 'crypto', 'keys', 'model', 'processes', 'errors'],
  // What the server counts (prom-client); told by http/ and app, read by server/ for the workers' sum.
  observe: [],
  // The route framework (Vault's sdk/framework): operations, responder, request parts, schemas, the
  // document builder and the contract a feature mounts by. It knows no feature's face.
  api: ['audit', 'auth', 'config', 'crypto', 'keys', 'kv', 'model', 'observe', 'store', 'errors'],
  // The request pipeline: the dispatcher, the listener, the audit of each request.
  http: ['api', 'audit', 'auth', 'config', 'crypto', 'model', 'observe', 'store', 'errors'],
  config: ['auth', 'keys', 'store', 'model', 'errors'],
  startup: ['audit', 'auth', 'config', 'crypto', 'directories', 'errors', 'keys', 'model', 'store'],
  // The features a server mounts, and the document made of them.
  features: ['api', 'auth', 'config', 'kv', 'observe', 'operator'],
  app: [
    'api',
    'audit',
    'config',
    'features',
    'http',
    'kv',
    'observe',
    'operator',
    'startup',
    'store',
  ],
  server: ['app', 'config', 'directories', 'http', 'observe', 'operator'],
  // The client's imports of http/ are of types only (the declarations its answers are typed by):
  // test/client/client.test.ts checks that the built client loads nothing but Node and itself.
  client: ['api', 'model'],
  cli: [
    'audit',
    'client',
    'config',
    'crypto',
    'directories',
    'errors',
    'keys',
    'model',
    'startup',
    'store',
  ],
  main: ['cli', 'client', 'config', 'errors', 'features', 'keys', 'server', 'version'],
};

/**
 * A feature's face: its module.ts and routes/ (api/feature.ts), which stand on the route framework (api/)
 * that the rest of its folder, the feature's core, stays below. What each face may import besides its own
 * feature's folder.
 */
const FACES: Readonly<Record<string, readonly string[]>> = {
  kv: ['api', 'model', 'errors'],
  auth: ['api', 'operator', 'startup', 'crypto', 'model', 'store', 'errors'],
  operator: ['api', 'audit', 'config', 'errors', 'model', 'version'],
  observe: ['api'],
};
const face = (name: string): string => `^src/${name}/(module\\.ts$|routes/)`;

/** A path pattern for part `name` of src/: the folder `name/`, or the file `name.ts`. */
const part = (name: string): string => `${name}(/|\\.ts$)`;

function rules(): IForbiddenRuleType[] {
  const layered = Object.entries(LAYERS).map(
    ([name, allowed]): IForbiddenRuleType => ({
      name: `layer-${name}`,
      comment: `src/${name} may import only ${allowed.length > 0 ? allowed.join(', ') : 'nothing else of src'}`,
      severity: 'error',
      from: { path: `^src/${part(name)}`, ...(name in FACES ? { pathNot: face(name) } : {}) },
      to: { path: '^src/', pathNot: `^src/(${[name, ...allowed].map(part).join('|')})` },
    }),
  );
  const faces = Object.entries(FACES).flatMap(([name, allowed]): IForbiddenRuleType[] => [
    {
      name: `face-${name}`,
      comment: `src/${name}/module.ts and routes/ may import only src/${name} and ${allowed.join(', ')}`,
      severity: 'error',
      from: { path: face(name) },
      to: { path: '^src/', pathNot: `^src/(${[name, ...allowed].map(part).join('|')})` },
    },
    {
      name: `core-below-face-${name}`,
      comment: `the rest of src/${name} does not reach its face`,
      severity: 'error',
      from: { path: `^src/${name}/`, pathNot: face(name) },
      to: { path: face(name) },
    },
    {
      name: `face-mounted-only-${name}`,
      comment: `a feature's face is reached only by features.ts, which mounts it (and the other faces' types)`,
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: `^src/(features\\.ts$|${name}/|(${Object.keys(FACES).join('|')})/module\\.ts$)`,
      },
      to: { path: face(name) },
    },
  ]);
  return [
    ...layered,
    ...faces,
    {
      name: 'storage-behind-the-store',
      comment: 'only src/store (the record layer) reaches the storage backends and the key layout',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(store|storage)/' },
      to: { path: '^src/storage/' },
    },
    {
      name: 'backend-of-is-for-tests',
      comment: 'the raw backend behind a Store is for store/ and for tests that play an attacker',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/store/' },
      to: { path: '^src/store/backend-of\\.ts$' },
    },
    {
      name: 'every-part-in-a-layer',
      comment: 'a new folder or top-level file of src/ takes its place in LAYERS',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: `^src/(${Object.keys(LAYERS).map(part).join('|')})`,
      },
      to: {},
    },
    {
      name: 'no-circular',
      comment: 'no file depends on itself through others',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ];
}

async function cruiseSources(baseDir: string): Promise<ICruiseResult> {
  const result = await cruise(
    ['src'],
    {
      baseDir,
      parser: 'swc',
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      // The console's TSX is read by esbuild (test/ui/console-bundle.test.ts): swc here takes no JSX.
      exclude: { path: 'node_modules|\\.tsx$' },
      validate: true,
      ruleSet: { forbidden: rules() },
    },
    { extensions: ['.ts', '.js'] },
  );
  return result.output as ICruiseResult;
}

/** Each violation as `rule: from -> to`. */
const violations = (result: ICruiseResult): string[] =>
  result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);

describe('the architecture (dependency rules, dependency-cruiser)', function () {
  this.timeout(60_000);

  it('holds: every part of src/ imports only the layers below it, storage only through the store, and no file depends on itself', async () => {
    const result = await cruiseSources(REPO);
    expect(result.summary.totalCruised).to.be.greaterThan(100);
    expect(violations(result)).to.deep.equal([]);
  });

  it("fires when a file outside the store imports the storage layer, when a layer imports one above it, when a feature's face is reached from below, and on a cycle", async () => {
    const dir = tempDir();
    const write = (path: string, text: string): void => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    write('src/storage/backend.ts', 'export interface StorageBackend { get(): void }\n');
    write(
      'src/store/store.ts',
      "import type { StorageBackend } from '../storage/backend.js';\nexport type S = StorageBackend;\n",
    );
    write(
      'src/http/route.ts',
      "import type { StorageBackend } from '../storage/backend.js';\nexport type R = StorageBackend;\n",
    );
    write('src/kv/service.ts', "import { h } from '../http/handler.js';\nexport const k = h;\n");
    write(
      'src/http/handler.ts',
      "import { k } from '../kv/service.js';\nexport const h = 1;\nexport const again = k;\n",
    );
    write('src/kv/routes/r.ts', 'export const r = 1;\n');
    write('src/kv/core.ts', "import { r } from './routes/r.js';\nexport const c = r;\n");
    write('src/api/op.ts', "import { r } from '../kv/routes/r.js';\nexport const o = r;\n");
    const found = violations(await cruiseSources(dir));
    expect(found).to.include('core-below-face-kv: src/kv/core.ts -> src/kv/routes/r.ts');
    expect(found).to.include('face-mounted-only-kv: src/api/op.ts -> src/kv/routes/r.ts');
    expect(found).to.include(
      'storage-behind-the-store: src/http/route.ts -> src/storage/backend.ts',
    );
    expect(found).to.include('layer-http: src/http/route.ts -> src/storage/backend.ts');
    expect(found).to.include('layer-kv: src/kv/service.ts -> src/http/handler.ts');
    expect(found.some((v) => v.startsWith('no-circular:'))).to.equal(true);
    expect(found.filter((v) => v.includes('src/store/store.ts'))).to.deep.equal([]);
  });
});
