import { execFileSync } from 'node:child_process';
import {
  accessSync,
  constants,
  mkdirSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { send } from '../support/http-client.js';
import { MAIN, serveSettings, startProcess } from '../support/process.js';
import { tempDir } from '../support/temp-dirs.js';

/** The checkout (dist/test/cli/../../..). */
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

const npm = (args: string[], cwd: string): string =>
  execFileSync('npm', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] }).toString();

describe('the coffer command, however it is installed', function () {
  this.timeout(180_000);

  it("runs from the build as an executable: the build keeps the entry point's run bit (npm link and npx coffer use it)", () => {
    // `npm test` has just built dist/ afresh, as `npm start` and `npm run build` do.
    expect(statSync(MAIN).mode & 0o111).to.equal(0o111);
    accessSync(MAIN, constants.X_OK);
    expect(execFileSync(MAIN, ['--version']).toString()).to.match(/^coffer \d+\.\d+\.\d+/);
  });

  it('installs from a packed tarball into a new prefix, and that coffer answers --help and serves', async () => {
    const dir = tempDir();
    // The tarball of this build (`npm pack` would build first, as `prepare`; the suite has just built).
    npm(['pack', '--ignore-scripts', '--pack-destination', dir], REPO);
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'))!;
    const prefix = join(dir, 'prefix');
    npm(
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        join(dir, tarball),
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
      ],
      dir,
    );
    const coffer = join(prefix, 'bin', 'coffer');
    const help = execFileSync(coffer, ['--help']).toString();
    expect(help).to.match(/^usage: coffer <command>/);

    const { env, root } = serveSettings(1);
    const server = await startProcess(env, dir, coffer);
    try {
      const created = await send(server.url, 'POST', '/v1/auth/token', root, { role: 'reader' });
      // argon2's binding loaded from the installed package: the new token was hashed.
      expect(created.status).to.equal(201);
      // The installed package's client, by its package name, from a program beside it.
      const app = join(dir, 'app');
      mkdirSync(join(app, 'node_modules'), { recursive: true });
      symlinkSync(
        join(prefix, 'lib', 'node_modules', 'coffer'),
        join(app, 'node_modules', 'coffer'),
      );
      writeFileSync(
        join(app, 'main.mjs'),
        "import { Coffer } from 'coffer/client';\n" +
          "const me = await new Coffer().self();\nconsole.log(me.is_root ? 'root' : 'other');\n",
      );
      const out = execFileSync(process.execPath, [join(app, 'main.mjs')], {
        cwd: app,
        env: { ...process.env, COFFER_ADDR: server.url, COFFER_TOKEN: root },
      }).toString();
      expect(out.trim()).to.equal('root');
    } finally {
      await server.stop();
    }
    // Only the server's own files are packed: no tests, benchmarks or sources.
    const packed = npm(['pack', '--dry-run', '--json', '--ignore-scripts'], REPO);
    const files = (JSON.parse(packed) as { files: { path: string }[] }[])[0]!.files.map(
      (f) => f.path,
    );
    expect(files.filter((f) => /^(dist\/(test|bench)|src|test|bench)\//.test(f))).to.deep.equal([]);
    expect(files).to.include('dist/src/main.js');
    expect(files).to.include('dist/src/client/index.d.ts');
  });
});
