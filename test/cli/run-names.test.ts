import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { command } from '../support/process.js';

/**
 * Who names a variable: a value whose writer could not read every value of its namespace — a config-only
 * writer, say — never names its own variable in `coffer run` or `coffer export`, so it cannot choose one
 * that makes the command run its code with the secrets beside it. Each case plants, as such a writer, the
 * variable a real program honors, runs that program, and checks that nothing of it ran; with the
 * command's user's own `--allow-var` (or `--map` for a known loader variable) the same value runs (so the
 * payload is real), showing the rule is all that stands in the way.
 */
interface Case {
  readonly child: string;
  readonly key: string;
  readonly variable: string;
  /** The value planted (MARKER: the file its code would write). */
  readonly value: (marker: string, dir: string) => string;
  /** The command coffer run starts, in `dir`. */
  readonly argv: (dir: string) => string[];
  /** A known loader variable: only --map names it. */
  readonly loader?: true;
  /** Runs nothing of the value without a remote or a terminal: checked refused only. */
  readonly refusedOnly?: true;
}

const CASES: readonly Case[] = [
  {
    child: 'npm',
    key: 'npm_config_node_options',
    variable: 'NPM_CONFIG_NODE_OPTIONS',
    value: (_marker, dir) => `--require=${join(dir, 'evil.cjs')}`,
    argv: () => ['npm', 'start', '--silent'],
  },
  {
    child: 'node',
    key: 'node_options',
    variable: 'NODE_OPTIONS',
    value: (_marker, dir) => `--require=${join(dir, 'evil.cjs')}`,
    argv: () => ['node', '-e', '0'],
    loader: true,
  },
  {
    child: 'python3',
    key: 'pythonpath',
    variable: 'PYTHONPATH',
    value: (_marker, dir) => join(dir, 'py'),
    argv: () => ['python3', '-c', '0'],
    loader: true,
  },
  {
    child: 'java',
    key: 'jdk_java_options',
    variable: 'JDK_JAVA_OPTIONS',
    value: (marker) => `-Xlog:all=info:file=${marker}`,
    argv: () => ['java', '-version'],
    loader: true,
  },
  {
    child: 'git',
    key: 'git_trace',
    variable: 'GIT_TRACE',
    value: (marker) => marker,
    argv: () => ['git', 'version'],
  },
  {
    child: 'ssh',
    key: 'ssh_askpass',
    variable: 'SSH_ASKPASS',
    value: (marker) => `/bin/sh -c 'touch ${marker}'`,
    argv: () => ['ssh', '-V'],
    refusedOnly: true,
  },
  {
    child: 'less',
    key: 'lessopen',
    variable: 'LESSOPEN',
    value: (marker) => `|touch ${marker}; echo %s`,
    argv: () => ['less', '-f', '/etc/hostname'],
  },
  {
    child: 'bash',
    key: 'bash_env',
    variable: 'BASH_ENV',
    value: (_marker, dir) => join(dir, 'evil.sh'),
    argv: () => ['bash', '-c', 'true'],
    loader: true,
  },
];

/** Whether `program` is on this machine's PATH. */
function installed(program: string): boolean {
  return (process.env.PATH ?? '')
    .split(':')
    .some((dir) => dir !== '' && existsSync(join(dir, program)));
}

describe('coffer run and export: a value names its own variable only if its writer could read the whole namespace', function () {
  this.timeout(120_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  let configWriter: string;
  let dir: string;

  before(async () => {
    c = await startTestCoffer();
    dir = tempDir();
    const role = await c.call('PUT', '/v1/sys/roles/config-writer', {
      json: {
        rules: [{ namespaces: ['app/*'], actions: ['read', 'list', 'write'], types: ['config'] }],
      },
    });
    expect(role.status, role.text).to.be.oneOf([200, 201]);
    configWriter = await c.token({ role: 'config-writer' });
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: await c.token({ role: 'reader' }) };
  });
  after(async () => {
    await c?.close();
  });

  for (const k of CASES)
    it(`${k.child}: ${k.variable} planted by a config-only writer is refused, and the command never starts`, async function () {
      if (!installed(k.child)) {
        if (this.test) this.test.title += ` [pending: no ${k.child} on this machine]`;
        this.skip();
      }
      const ns = `app/${k.child}`;
      const work = join(dir, k.child);
      mkdirSync(join(work, 'py'), { recursive: true });
      const marker = join(work, 'ran');
      writeFileSync(
        join(work, 'evil.cjs'),
        `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`,
      );
      writeFileSync(join(work, 'evil.sh'), `touch ${marker}\n`);
      writeFileSync(
        join(work, 'py', 'sitecustomize.py'),
        `open(${JSON.stringify(marker)}, 'w').write('x')\n`,
      );
      writeFileSync(
        join(work, 'package.json'),
        JSON.stringify({ name: 'x', version: '1.0.0', scripts: { start: 'node -e 0' } }),
      );
      await c.put(`${ns}/db_password`, 'the-secret', 'secret');
      const planted = await c.put(`${ns}/${k.key}`, k.value(marker, work), 'config', configWriter);
      expect(planted.status, planted.text).to.equal(201);

      const run = await command(['run', '--ns', ns, '--', ...k.argv(work)], env);
      expect(run.code, run.stderr).to.equal(2);
      expect(run.stderr).to.include(`${ns}/${k.key} (${k.variable})`);
      expect(existsSync(marker), 'the planted value ran').to.equal(false);
      const exported = await command(['export', '--ns', ns, '--format', 'shell'], env);
      expect(exported.code, exported.stderr).to.equal(2);
      expect(exported.stdout).to.not.include(k.variable);
      if (k.refusedOnly) return;

      // The command's user may name it: then it is theirs, and it runs (the payload is real).
      const allow = k.loader ? ['--map', `${k.key}=${k.variable}`] : ['--allow-var', k.variable];
      const allowed = await command(
        [
          'run',
          '--ns',
          ns,
          ...allow,
          '--',
          'sh',
          '-c',
          `cd ${work} && exec "$@"`,
          'sh',
          ...k.argv(work),
        ],
        env,
      );
      expect(allowed.code, allowed.stderr).to.equal(0);
      expect(existsSync(marker), `${k.variable} named by the user ran`).to.equal(true);
    });

  it('a value written by a token that may read the whole namespace names its variable by the rule; the listing says which is which', async () => {
    await c.put('app/mixed/api_url', 'https://api.example', 'config');
    await c.put('app/mixed/db_password', 'pw', 'secret');
    await c.put('app/mixed/log_level', 'debug', 'config', configWriter);
    const values = (await c.call('GET', '/v1/kv/app/mixed/?values=true')).body.values as {
      key: string;
      writer_reads_all: boolean;
    }[];
    expect(values.map((v) => [v.key, v.writer_reads_all])).to.deep.equal([
      ['api_url', true],
      ['db_password', true],
      ['log_level', false],
    ]);
    const ok = await command(
      ['export', '--ns', 'app/mixed', '--only', 'api_url', '--only', 'db_password'],
      env,
    );
    expect(ok.code, ok.stderr).to.equal(0);
    expect(ok.stdout).to.include('API_URL=').and.to.include('DB_PASSWORD=');
    const refused = await command(['export', '--ns', 'app/mixed'], env);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('app/mixed/log_level (LOG_LEVEL)');
    const named = await command(['export', '--ns', 'app/mixed', '--allow-var', 'LOG_LEVEL'], env);
    expect(named.code, named.stderr).to.equal(0);
    expect(named.stdout).to.include('LOG_LEVEL=');
  });
});
