import { execFile, execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';

/** The checkout (this file runs from dist/test/client). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** Every file under `dir`, with its size. */
function filesIn(dir: string): { path: string; bytes: number }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = statSync(path);
    return stat.isDirectory() ? filesIn(path) : [{ path, bytes: stat.size }];
  });
}

const run = promisify(execFile);

/**
 * A directory of the machine's commands without a compiler, Python or make: what node:20-slim has. A
 * package that needs a native build cannot install with this PATH.
 */
function slimPath(): string {
  const dir = tempDir();
  const compilers =
    /^(python|g\+\+|gcc|cc$|c\+\+|cpp|make$|cmake|clang|x86_64-linux-gnu-|ld$|ld\.|as$)/;
  for (const from of ['/usr/local/bin', '/usr/bin', '/bin'])
    for (const name of existsSync(from) ? readdirSync(from) : [])
      if (!compilers.test(name) && !existsSync(join(dir, name)))
        symlinkSync(join(from, name), join(dir, name));
  return dir;
}

/** The Dockerfile docs/applications.md gives, an instruction a line. */
function documentedDockerfile(): string[] {
  const text = readFileSync(join(ROOT, 'docs/applications.md'), 'utf8');
  const block = /```dockerfile\n([\s\S]*?)```/.exec(text)?.[1];
  expect(block, 'a dockerfile block in docs/applications.md').to.be.a('string');
  return block!.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

describe('the client as its own package (@coffer/client)', function () {
  this.timeout(180_000);
  let c: TestCoffer;
  let app: string;
  let tarball: string;
  before(async () => {
    c = await startTestCoffer();
    const packed = execFileSync(
      process.execPath,
      [join(ROOT, 'scripts/pack-client.mjs'), '--to', tempDir()],
      { encoding: 'utf8' },
    );
    tarball = packed.trim().split('\n').at(-1)!;
    expect(tarball).to.match(/coffer-client-0\.1\.0\.tgz$/);
    // A new application, as a team would start one.
    app = tempDir();
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'payments-api', private: true, type: 'module' }),
    );
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
      cwd: app,
      stdio: 'pipe',
    });
  });
  after(async () => {
    await c?.close();
  });

  it('its docs name every dependency it has, and say how many', () => {
    const deps = Object.keys(
      JSON.parse(readFileSync(join(ROOT, 'packages/client/package.json'), 'utf8')).dependencies,
    );
    expect(deps).to.have.length(2);
    for (const doc of ['docs/clients.md', 'packages/client/README.md']) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const dep of deps) expect(text, doc).to.include(`\`${dep}\``);
      expect(text, doc).to.include('two dependencies');
      expect(text, doc).to.not.include('one dependency');
    }
  });

  it("installs with no native dependency: itself, the plain-JavaScript packages of its types and of coffer-run's sealed copy, under 10 MB (the server: 76)", () => {
    const modules = join(app, 'node_modules');
    const installed = readdirSync(modules).filter((name) => !name.startsWith('.'));
    expect(installed.sort()).to.deep.equal([
      '@coffer',
      '@sinclair',
      'libsodium',
      'libsodium-wrappers',
    ]);
    expect(readdirSync(join(modules, '@coffer'))).to.deep.equal(['client']);
    expect(readdirSync(join(modules, '@sinclair'))).to.deep.equal(['typebox']);
    expect(readdirSync(join(modules, '.bin'))).to.deep.equal(['coffer-run']);
    const files = filesIn(modules);
    const native = files.filter(
      (f) => f.path.endsWith('.node') || f.path.endsWith('binding.gyp') || f.path.endsWith('.so'),
    );
    expect(native).to.deep.equal([]);
    expect(files.reduce((sum, f) => sum + f.bytes, 0)).to.be.below(10 * 1024 * 1024);
    // Nothing of the server runs from it: its JavaScript is the client's and coffer-run's.
    const code = filesIn(join(modules, '@coffer/client/dist'))
      .map((f) => f.path.slice(f.path.indexOf('/dist/') + 6))
      .filter((p) => p.endsWith('.js'));
    expect(
      code.filter((p) => !p.startsWith('client/') && !p.startsWith('cli/')).sort(),
    ).to.deep.equal(['keys/key-provider.js', 'keys/secret-file.js', 'model/duration.js']);
    expect(code.some((p) => /^(storage|store|server|startup|http)\//.test(p))).to.equal(false);
  });

  it('is used from plain JavaScript: a read, and a CofferError with its status', async () => {
    await c.put('pkg/app/greeting', 'hello from coffer', 'config');
    const token = await c.token({ scopes: [{ namespace: 'pkg/app', read: true }] });
    writeFileSync(
      join(app, 'read.mjs'),
      `import { Coffer, CofferError } from '@coffer/client';
const coffer = new Coffer(); // COFFER_ADDR and COFFER_TOKEN
const { value } = await coffer.get('pkg/app', 'greeting');
let status = null;
try { await coffer.get('pkg/app', 'missing'); } catch (err) { status = err instanceof CofferError ? err.status : 'not a CofferError'; }
console.log(JSON.stringify({ value, status }));
`,
    );
    // (Not spawnSync: the server answering it runs in this process.)
    const read = await run(process.execPath, ['read.mjs'], {
      cwd: app,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, COFFER_ADDR: c.url, COFFER_TOKEN: token },
    });
    expect(JSON.parse(read.stdout)).to.deep.equal({ value: 'hello from coffer', status: 404 });
  });

  it('is typed: an application that uses it right compiles, one that misuses an answer does not', () => {
    const compile = (file: string, source: string) => {
      writeFileSync(join(app, file), source);
      const config = `tsconfig.${file}.json`;
      writeFileSync(
        join(app, config),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            strict: true,
            noEmit: true,
            // The package's own declarations are checked too, against only what it installs.
            skipLibCheck: false,
            types: ['node'],
            typeRoots: [join(ROOT, 'node_modules/@types')],
          },
          files: [file],
        }),
      );
      return spawnSync(process.execPath, [TSC, '-p', config], { cwd: app, encoding: 'utf8' });
    };
    const good = compile(
      'good.ts',
      `import { Coffer, type Entry, type Listing } from '@coffer/client';
const coffer = new Coffer({ url: 'https://coffer.internal:8750', token: 'from-a-file' });
export async function start(): Promise<string> {
  const entry: Entry = await coffer.get('payments/prod', 'db_password');
  const listing: Listing = await coffer.list('payments/prod');
  return \`\${entry.value} \${entry.version} \${listing.keys.length}\`;
}
`,
    );
    expect(good.status, good.stdout + good.stderr).to.equal(0);
    const bad = compile(
      'bad.ts',
      `import { Coffer } from '@coffer/client';
const coffer = new Coffer();
export async function start(): Promise<number> {
  return (await coffer.get('payments/prod', 'db_password')).value;
}
`,
    );
    expect(bad.status).to.not.equal(0);
    expect(bad.stdout).to.match(/bad\.ts.*error TS2322/);
  });

  it("docs/applications.md's Dockerfile builds as written, with no compiler, and its entrypoint gives the program its values", async () => {
    await c.put('payments/prod/db_password', 'from-the-image', 'secret');
    const token = await c.token({ scopes: [{ namespace: 'payments/prod', read: true }] });
    // The build context: the packed client beside the Dockerfile, and the application.
    const context = tempDir();
    cpSync(tarball, join(context, basename(tarball)));
    mkdirSync(join(context, 'app'));
    writeFileSync(
      join(context, 'app/server.js'),
      `console.log(JSON.stringify({ password: process.env.DB_PASSWORD ?? null, token: Object.keys(process.env).filter((k) => k.startsWith('COFFER_TOKEN')) }));
process.exit(7);
`,
    );
    // The image's root, and its commands: the machine's, less any compiler.
    const image = tempDir();
    const inImage = (path: string) => join(image, path);
    const slim = slimPath();
    expect(existsSync(join(slim, 'g++')) || existsSync(join(slim, 'python3'))).to.equal(false);
    let entrypoint: string[] = [];
    let command: string[] = [];
    for (const line of documentedDockerfile()) {
      const [instruction, ...rest] = line.split(' ');
      const args = rest.join(' ');
      if (instruction === 'FROM')
        expect(args).to.equal('node:20-slim'); // this machine's node 20
      else if (instruction === 'COPY') {
        const [from, to] = rest as [string, string];
        const target = to.endsWith('/') ? join(inImage(to), basename(from)) : inImage(to);
        mkdirSync(dirname(target), { recursive: true });
        cpSync(join(context, from), target, { recursive: true });
      } else if (instruction === 'RUN') {
        // npm's global prefix is the image's /usr/local; every /tmp/ path is the image's.
        const script = args
          .replaceAll('/tmp/', `${inImage('tmp')}/`)
          .replaceAll(
            'npm install -g ',
            `npm install -g --prefix ${inImage('usr/local')} --no-audit --no-fund --prefer-offline `,
          );
        await run('sh', ['-c', script], {
          cwd: image,
          env: { PATH: slim, HOME: tempDir(), npm_config_cache: join(homedir(), '.npm') },
        });
      } else if (instruction === 'USER') {
        // The commands run as this test's user: what USER changes is not tried here.
      } else if (instruction === 'ENTRYPOINT') entrypoint = JSON.parse(args);
      else if (instruction === 'CMD') command = JSON.parse(args);
      else expect.fail(`an instruction this test does not build: ${line}`);
    }
    expect(existsSync(inImage('tmp/coffer-client-0.1.0.tgz')), 'the RUN removed it').to.equal(
      false,
    );
    // `docker run -e COFFER_ADDR=… -e COFFER_TOKEN_FILE=/run/secrets/coffer_token -v …`.
    const tokenFile = join(tempDir(), 'coffer_token');
    writeFileSync(tokenFile, token);
    chmodSync(tokenFile, 0o600);
    const [program, ...args] = [...entrypoint, ...command].map((arg) =>
      arg.startsWith('/app/') ? inImage(arg) : arg,
    );
    const started = await run(program!, args, {
      env: {
        PATH: `${inImage('usr/local/bin')}:${slim}`,
        HOME: tempDir(),
        COFFER_ADDR: c.url,
        COFFER_TOKEN_FILE: tokenFile,
      },
    }).then(
      () => expect.fail('the program exits 7'),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(started.code, started.stderr).to.equal(7);
    expect(JSON.parse(started.stdout)).to.deep.equal({ password: 'from-the-image', token: [] });
  });
});
