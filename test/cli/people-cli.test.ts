import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { expect } from 'chai';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { command } from '../support/process.js';

/** Values that quoting gets wrong: quotes of each kind, $, backslashes, line breaks, non-ASCII. */
const AWKWARD: Record<string, string> = {
  plain: 'simple-value',
  single: "it's",
  double: 'say "hi"',
  dollar: '$HOME and ${PATH} and `id`',
  backslash: 'C:\\path\\n\\t',
  lines: 'line one\nline two\nline three',
  crlf: 'windows\r\nline',
  unicode: 'pässwörd ✓ 𝄞',
  empty: '',
};

describe('the coffer command for people: kv, token, whoami, export', function () {
  this.timeout(60_000);
  let c: TestCoffer;
  let env: Record<string, string>;
  let dir: string;

  before(async () => {
    c = await startTestCoffer();
    env = { COFFER_ADDR: c.url, COFFER_TOKEN: c.rootToken };
    dir = tempDir();
  });
  after(async () => {
    await c.close();
  });

  describe('kv', () => {
    it('refuses a namespace or key name the server would refuse as bad arguments (exit 2), before asking it', async () => {
      for (const [path, says] of [
        ['payments/prod/bad name', 'bad name is not a valid key name'],
        ['pay ments/prod/db', 'pay ments/prod is not a valid namespace name'],
        ['payments//db', 'payments/ is not a valid namespace name'],
      ] as const) {
        const got = await command(['kv', 'get', path], {
          ...env,
          COFFER_ADDR: 'http://127.0.0.1:9',
        });
        expect(got.code, path).to.equal(2);
        expect(got.stderr).to.include(says);
      }
    });

    it('puts a value from an argument, a file (@file, bytes exactly) and stdin, and gets each back exactly', async () => {
      const fromArg = await command(
        ['kv', 'put', 'team/app/log_level', 'debug', '--type', 'config'],
        env,
      );
      expect(fromArg.code).to.equal(0);
      expect(fromArg.stdout).to.equal('created team/app/log_level version 1 (config)\n');
      const file = join(dir, 'cert.pem');
      writeFileSync(file, '-----BEGIN-----\nabc\n-----END-----\n');
      expect((await command(['kv', 'put', 'team/app/cert', `@${file}`], env)).code).to.equal(0);
      const fromStdin = await command(['kv', 'put', 'team/app/db_password'], env, 'hunter2');
      expect(fromStdin.stdout).to.equal('created team/app/db_password version 1 (secret)\n');
      const again = await command(['kv', 'put', 'team/app/db_password', '-'], env, 'hunter3');
      expect(again.stdout).to.equal('stored team/app/db_password version 2 (secret)\n');

      expect((await command(['kv', 'get', 'team/app/log_level'], env)).stdout).to.equal('debug');
      expect((await command(['kv', 'get', 'team/app/cert'], env)).stdout).to.equal(
        '-----BEGIN-----\nabc\n-----END-----\n',
      );
      expect((await command(['kv', 'get', 'team/app/db_password'], env)).stdout).to.equal(
        'hunter3',
      );
      expect(
        (await command(['kv', 'get', 'team/app/db_password', '--version', '1'], env)).stdout,
      ).to.equal('hunter2');
    });

    it('answers --json with the API objects', async () => {
      const got = JSON.parse(
        (await command(['kv', 'get', 'team/app/db_password', '--json'], env)).stdout,
      );
      expect(got).to.include({
        namespace: 'team/app',
        key: 'db_password',
        version: 2,
        value: 'hunter3',
      });
      const put = JSON.parse(
        (await command(['kv', 'put', 'team/app/flag', 'on', '--type', 'config', '--json'], env))
          .stdout,
      );
      expect(put).to.include({ key: 'flag', version: 1, type: 'config', created: true });
      const listed = JSON.parse((await command(['kv', 'ls', 'team/app', '--json'], env)).stdout);
      expect(listed).to.deep.equal({
        namespace: 'team/app',
        keys: ['cert', 'db_password', 'flag', 'log_level'],
        namespaces: [],
      });
      const versions = JSON.parse(
        (await command(['kv', 'versions', 'team/app/db_password', '--json'], env)).stdout,
      );
      expect(versions.versions.map((v: { version: number }) => v.version)).to.deep.equal([1, 2]);
    });

    it('lists and shows versions as text for people', async () => {
      expect((await command(['kv', 'ls', 'team'], env)).stdout).to.equal('app/\n');
      expect((await command(['kv', 'ls'], env)).stdout).to.include('team/\n');
      expect((await command(['kv', 'ls', 'team/app'], env)).stdout).to.equal(
        'cert\ndb_password\nflag\nlog_level\n',
      );
      // --prefix asks the server for the names that start with it.
      expect((await command(['kv', 'ls', 'team/app', '--prefix', 'lo'], env)).stdout).to.equal(
        'log_level\n',
      );
      const table = (await command(['kv', 'versions', 'team/app/db_password'], env)).stdout.split(
        '\n',
      );
      expect(table[0]).to.match(/^VERSION\s+TYPE\s+CREATED\s+STATE$/);
      expect(table[1]).to.match(/^1\s+secret\s+\d{4}-/);
      expect(table[2]).to.match(/^2\s+secret\s+\d{4}-/);
    });

    it('check-and-set: --if-version writes only over that version, else exit 6 with the version there', async () => {
      const stale = await command(
        ['kv', 'put', 'team/app/db_password', 'x', '--if-version', '1'],
        env,
      );
      expect(stale.code).to.equal(6);
      expect(stale.stderr).to.match(
        /^coffer: team\/app\/db_password: .*latest version is 2.*\(412\)\n$/,
      );
      expect(
        (await command(['kv', 'put', 'team/app/db_password', 'x', '--if-version', '2'], env)).code,
      ).to.equal(0);
      expect(
        (await command(['kv', 'put', 'team/app/new', 'x', '--if-version', '0'], env)).code,
      ).to.equal(0);
      expect((await command(['kv', 'rm', 'team/app/new', '--if-version', '2'], env)).code).to.equal(
        6,
      );
      expect((await command(['kv', 'rm', 'team/app/new', '--if-version', '1'], env)).code).to.equal(
        0,
      );
      const gone = await command(['kv', 'get', 'team/app/new'], env);
      expect(gone.code).to.equal(3);
      expect(gone.stderr).to.equal(
        'coffer: team/app/new: the key is deleted (404); coffer kv undelete team/app/new brings it back\n',
      );
      const never = await command(['kv', 'get', 'team/app/never'], env);
      expect([never.code, never.stderr]).to.deep.equal([
        3,
        'coffer: team/app/never: not found (404)\n',
      ]);
    });

    it('the trash: rm keeps the versions, undelete brings the key back, rollback writes an old value again, destroy needs --yes', async () => {
      for (const value of ['one', 'two']) await command(['kv', 'put', 'team/trash/k', value], env);
      const removed = await command(['kv', 'rm', 'team/trash/k'], env);
      expect([removed.code, removed.stdout]).to.deep.equal([
        0,
        'deleted team/trash/k: in the trash (coffer kv undelete team/trash/k brings it back)\n',
      ]);
      const notTrashed = await command(['kv', 'undelete', 'team/app/db_password'], env);
      expect([notTrashed.code, notTrashed.stderr]).to.deep.equal([
        3,
        'coffer: team/app/db_password: not in the trash (404)\n',
      ]);
      const inTrash = await command(['kv', 'get', 'team/trash/k'], env);
      expect([inTrash.code, inTrash.stderr]).to.deep.equal([
        3,
        'coffer: team/trash/k: the key is deleted (404); coffer kv undelete team/trash/k brings it back\n',
      ]);
      const trash = (await command(['kv', 'trash', 'team/trash'], env)).stdout.split('\n');
      expect(trash[0]).to.match(/^KEY\s+VERSION\s+TYPE\s+DELETED$/);
      expect(trash[1]).to.match(/^k\s+2\s+secret\s+\d{4}-/);
      const listed = (await command(['kv', 'versions', 'team/trash/k'], env)).stdout;
      expect(listed).to.match(
        /^deleted at \d{4}-.*coffer kv undelete team\/trash\/k brings it back\)$/m,
      );
      const restored = await command(['kv', 'undelete', 'team/trash/k'], env);
      expect([restored.code, restored.stdout]).to.deep.equal([
        0,
        'restored team/trash/k: its latest version is 2 (secret)\n',
      ]);
      const back = await command(['kv', 'rollback', 'team/trash/k', '--version', '1'], env);
      expect([back.code, back.stdout]).to.deep.equal([
        0,
        "stored team/trash/k version 3 (secret): version 1's value\n",
      ]);
      expect((await command(['kv', 'get', 'team/trash/k'], env)).stdout).to.equal('one');
      // Over a version that is no longer the latest: exit 6, nothing written.
      expect(
        (
          await command(
            ['kv', 'rollback', 'team/trash/k', '--version', '2', '--if-version', '2'],
            env,
          )
        ).code,
      ).to.equal(6);
      const unsure = await command(['kv', 'destroy', 'team/trash/k'], env);
      expect(unsure.code).to.equal(2);
      expect(unsure.stderr).to.include('add --yes');
      const destroyed = await command(['kv', 'destroy', 'team/trash/k', '--yes'], env);
      expect([destroyed.code, destroyed.stdout]).to.deep.equal([
        0,
        'destroyed team/trash/k: every version erased\n',
      ]);
      expect((await command(['kv', 'get', 'team/trash/k', '--version', '1'], env)).code).to.equal(
        3,
      );
      expect((await command(['kv', 'undelete', 'team/trash/k'], env)).code).to.equal(3);
    });

    it('--versions: rm, undelete and destroy (with --yes) one version, the others kept; versions shows each state', async () => {
      for (const value of ['one', 'two', 'three'])
        await command(['kv', 'put', 'team/some/k', value], env);
      const rm = await command(['kv', 'rm', 'team/some/k', '--versions', '1'], env);
      expect([rm.code, rm.stdout]).to.deep.equal([
        0,
        'deleted version 1 of team/some/k; the key is live\n',
      ]);
      const deletedAlone = await command(['kv', 'get', 'team/some/k', '--version', '1'], env);
      expect([deletedAlone.code, deletedAlone.stderr]).to.deep.equal([
        3,
        'coffer: team/some/k: version 1 is deleted (404)\n',
      ]);
      expect((await command(['kv', 'get', 'team/some/k'], env)).stdout).to.equal('three');
      const unsure = await command(['kv', 'destroy', 'team/some/k', '--versions', '2'], env);
      expect([unsure.code, unsure.stderr.includes('add --yes')]).to.deep.equal([2, true]);
      const destroyed = await command(
        ['kv', 'destroy', 'team/some/k', '--versions', '2', '--yes', '--json'],
        env,
      );
      expect(JSON.parse(destroyed.stdout)).to.deep.include({ versions: [2], key_state: 'live' });
      const states = (await command(['kv', 'versions', 'team/some/k'], env)).stdout.split('\n');
      expect(states[1]).to.match(/^1\s+secret\s+\S+\s+deleted \d{4}-/);
      expect(states[2]).to.match(/^2\s+secret\s+\S+\s+destroyed$/);
      expect((await command(['kv', 'get', 'team/some/k', '--version', '2'], env)).stderr).to.equal(
        'coffer: team/some/k: version 2 is destroyed (404)\n',
      );
      expect(states[3]).to.match(/^3\s+secret\s+\S+$/);
      const back = await command(['kv', 'undelete', 'team/some/k', '--versions', '1,2'], env);
      expect(back.stdout).to.equal('undeleted version 1 of team/some/k; the key is live\n');
      expect((await command(['kv', 'get', 'team/some/k', '--version', '1'], env)).stdout).to.equal(
        'one',
      );
      expect((await command(['kv', 'rm', 'team/some/k', '--versions', 'x'], env)).code).to.equal(2);
    });

    it("meta: shows a key's own metadata, and sets fields, the versions kept and check-and-set", async () => {
      await command(['kv', 'put', 'team/meta/k', 'one'], env);
      const none = await command(['kv', 'meta', 'team/meta/k'], env);
      expect([none.code, none.stdout]).to.deep.equal([
        0,
        'versions kept: no limit\ncheck-and-set required: no\nversions deleted after: never\nmetadata: none\n',
      ]);
      const set = await command(
        [
          'kv',
          'meta',
          'team/meta/k',
          '--set',
          'owner=payments',
          '--set',
          'tier=gold',
          '--max-versions',
          '5',
          '--cas-required',
          'true',
          '--delete-after',
          '12h',
        ],
        env,
      );
      expect(set.stdout).to.equal(
        'versions kept: 5\ncheck-and-set required: yes\nversions deleted after: 12h\nmetadata:\n  owner=payments\n  tier=gold\n',
      );
      const bad = await command(['kv', 'meta', 'team/meta/k', '--delete-after', 'soon'], env);
      expect(bad.code).to.equal(2);
      const unset = await command(['kv', 'meta', 'team/meta/k', '--unset', 'tier', '--json'], env);
      expect(JSON.parse(unset.stdout)).to.deep.include({
        custom_metadata: { owner: 'payments' },
        max_versions: 5,
        cas_required: true,
        delete_version_after: 43_200,
      });
      // Check-and-set is now required: a write without --if-version is refused, one with it is taken.
      const bare = await command(['kv', 'put', 'team/meta/k', 'two'], env);
      expect(bare.code).to.equal(1);
      expect(bare.stderr).to.include('requires check-and-set');
      expect(
        (await command(['kv', 'put', 'team/meta/k', 'two', '--if-version', '1'], env)).code,
      ).to.equal(0);
      for (const bad of [
        ['--max-versions', 'x'],
        ['--cas-required', 'yes'],
        ['--set', 'novalue'],
      ])
        expect(
          (await command(['kv', 'meta', 'team/meta/k', ...bad], env)).code,
          bad.join(' '),
        ).to.equal(2);
    });

    it('says each error in one line with its exit code: no token, 403, 404, unreachable, bad arguments', async () => {
      const noToken = await command(['kv', 'get', 'team/app/flag'], { COFFER_ADDR: c.url });
      expect([noToken.code, noToken.stderr]).to.deep.equal([
        2,
        'coffer: no token: set COFFER_TOKEN, or COFFER_TOKEN_FILE to a file holding it, or sign in (coffer login --oidc)\n',
      ]);
      const reader = await c.token({ scopes: [{ namespace: 'elsewhere', read: true }] });
      const denied = await command(['kv', 'get', 'team/app/flag'], {
        COFFER_ADDR: c.url,
        COFFER_TOKEN: reader,
      });
      expect(denied.code).to.equal(4);
      expect(denied.stderr).to.match(/^coffer: forbidden \(403\): .+\n$/);
      const missing = await command(['kv', 'get', 'team/app/nope'], env);
      expect([missing.code, missing.stderr]).to.deep.equal([
        3,
        'coffer: team/app/nope: not found (404)\n',
      ]);
      const down = await command(['kv', 'get', 'team/app/flag'], {
        ...env,
        COFFER_ADDR: 'http://127.0.0.1:9',
      });
      expect(down.code).to.equal(5);
      expect(down.stderr).to.match(
        /^coffer: cannot reach Coffer at http:\/\/127\.0\.0\.1:9: .+\n$/,
      );
      const bad = await command(['kv', 'get', 'justakey'], env);
      expect(bad.code).to.equal(2);
      const revoked = await c.token({ role: 'reader' });
      await c.call('DELETE', `/v1/auth/token/${revoked.split('_')[1]}`);
      const refused = await command(['kv', 'get', 'team/app/flag'], {
        COFFER_ADDR: c.url,
        COFFER_TOKEN: revoked,
      });
      expect(refused.code).to.equal(4);
      for (const r of [noToken, denied, missing, down, bad, refused]) {
        expect(r.stderr.split('\n')).to.have.length(2);
        expect(r.stderr)
          .not.to.include(c.rootToken)
          .and.not.to.include(reader)
          .and.not.to.include(revoked);
      }
    });

    it('reads the token from COFFER_TOKEN_FILE', async () => {
      const file = join(dir, 'token');
      writeFileSync(file, `${c.rootToken}\n`, { mode: 0o600 });
      const got = await command(['kv', 'get', 'team/app/flag'], {
        COFFER_ADDR: c.url,
        COFFER_TOKEN_FILE: file,
      });
      expect(got.stdout).to.equal('on');
      // A file that cannot be read is the settings' fault (exit 2), not Coffer out of reach (exit 5).
      for (const [missing, code] of [
        [join(dir, 'no-such-token'), 'ENOENT'],
        [dir, 'EISDIR'],
      ]) {
        const refused = await command(['kv', 'get', 'team/app/flag'], {
          COFFER_ADDR: c.url,
          COFFER_TOKEN_FILE: missing!,
        });
        expect([refused.code, refused.stderr]).to.deep.equal([
          2,
          `coffer: cannot read the token file (COFFER_TOKEN_FILE) ${missing} (${code})\n`,
        ]);
      }
    });
  });

  describe('token and whoami', () => {
    it("shows a name someone else chose as text, never as the terminal's controls (escapes, bidi overrides)", async () => {
      // Clear the screen, set the title, and move up over the line before: a listing that hides a token.
      const name = 'x\u001b[2J\u001b]0;owned\u0007\u001b[1A\r\u009b31m\u202eevil';
      const made = await c.call('POST', '/v1/auth/token', {
        json: { role: 'reader', metadata: { name } },
      });
      expect(made.status).to.equal(201);
      const own = String(made.body.token);
      const listed = await command(['token', 'ls'], env);
      const whoami = await command(['whoami'], { COFFER_ADDR: c.url, COFFER_TOKEN: own });
      for (const out of [listed.stdout, whoami.stdout]) {
        expect(out.replace(/\n/g, '')).to.not.match(/[\p{Cc}\u202a-\u202e]/u);
        expect(out).to.include(
          'x\\u001b[2J\\u001b]0;owned\\u0007\\u001b[1A\\u000d\\u009b31m\\u202eevil',
        );
      }
      expect(listed.stdout).to.include(made.body.id);
      // --json is JSON's own escaping, read back exactly.
      const asJson = JSON.parse((await command(['token', 'ls', '--json'], env)).stdout);
      expect(
        asJson.tokens.find((t: { id: string }) => t.id === made.body.id).metadata.name,
      ).to.equal(name);
      await c.call('DELETE', `/v1/auth/token/${made.body.id}`);
      // A key's own metadata, which whoever may write the key sets.
      await c.put('team/escapes/k', 'v', 'config');
      const set = await c.call('PATCH', '/v1/kv/team/escapes/k', {
        json: { custom_metadata: { owner: name } },
      });
      expect(set.status, set.text).to.equal(200);
      const meta = await command(['kv', 'meta', 'team/escapes/k'], env);
      expect(meta.stdout.replace(/\n/g, '')).to.not.match(/[\p{Cc}\u202a-\u202e]/u);
      expect(meta.stdout).to.include('owner=x\\u001b[2J');
    });

    it('creates a token (table and --json), lists it, shows whoami for it, and revokes it by id', async () => {
      const made = await command(
        ['token', 'create', '--scope', 'team/app:r', '--name', 'cli-test', '--ttl', '1h'],
        env,
      );
      expect(made.code).to.equal(0);
      // The token alone on stdout, so that TOKEN=$(coffer token create …) holds nothing else.
      const value = made.stdout.trimEnd();
      expect(value).to.match(/^cfr_[A-Za-z0-9]+_[A-Za-z0-9]+$/);
      expect(made.stderr).to.include('shown this once').and.not.include(value);
      const id = value.split('_')[1]!;

      const asJson = JSON.parse(
        (await command(['token', 'create', '--role', 'reader', '--json'], env)).stdout,
      );
      expect(asJson).to.include({ role: 'reader' });
      expect(asJson.token).to.match(/^cfr_/);

      const listed = (await command(['token', 'ls'], env)).stdout.split('\n');
      expect(listed[0]).to.match(/^ID\s+NAME\s+ROLE \/ SCOPES\s+STATUS\s+EXPIRES$/);
      expect(listed.find((l) => l.startsWith(id))).to.match(/cli-test\s+team\/app:r\s+active/);
      const listedJson = JSON.parse((await command(['token', 'ls', '--json'], env)).stdout);
      expect(listedJson.tokens.map((t: { id: string }) => t.id)).to.include(id);
      expect(JSON.stringify(listedJson)).not.to.include(value);

      const who = await command(['whoami'], { COFFER_ADDR: c.url, COFFER_TOKEN: value });
      expect(who.stdout).to.match(new RegExp(`^${id} \\(cli-test\\): scoped, expires \\d{4}-`));
      expect(who.stdout).to.match(/team\/app\s+read,list\s+config,secret/);
      const whoJson = JSON.parse(
        (await command(['whoami', '--json'], { COFFER_ADDR: c.url, COFFER_TOKEN: value })).stdout,
      );
      expect(whoJson).to.include({ id, is_root: false });

      const revoked = await command(['token', 'revoke', id], env);
      expect([revoked.code, revoked.stdout]).to.deep.equal([
        0,
        `revoked token ${id}, and every token made from it\n`,
      ]);
      const after = await command(['whoami'], { COFFER_ADDR: c.url, COFFER_TOKEN: value });
      expect(after.code).to.equal(4);
      const all = JSON.parse((await command(['token', 'ls', '--all', '--json'], env)).stdout);
      expect(all.tokens.find((t: { id: string }) => t.id === id).status).to.equal('revoked');

      // Any token may renew itself, and revoke itself; the root token may do neither.
      const own = asJson.token as string;
      const renewed = await command(['token', 'renew', '--json'], {
        COFFER_ADDR: c.url,
        COFFER_TOKEN: own,
      });
      expect(JSON.parse(renewed.stdout)).to.include({ id: asJson.id });
      expect((await command(['token', 'renew'], env)).code).to.equal(1);
      expect(
        (await command(['token', 'revoke-self'], { COFFER_ADDR: c.url, COFFER_TOKEN: own })).code,
      ).to.equal(0);
      expect((await command(['whoami'], { COFFER_ADDR: c.url, COFFER_TOKEN: own })).code).to.equal(
        4,
      );
      const rootSelf = await command(['token', 'revoke-self'], env);
      expect(rootSelf.code).to.equal(1);
      // One line, the server's detail once (a 400 naming no field repeats it as its one entry).
      expect(rootSelf.stderr).to.equal(
        'coffer: token: 400 invalid_request: the root token cannot be revoked; set COFFER_ROOT_TOKEN and restart to replace it\n',
      );
      // A field at fault is named after it.
      expect((await command(['token', 'create', '--role', 'nosuch'], env)).stderr).to.equal(
        'coffer: token: 400 invalid_request: unknown role "nosuch" (/role: must name a role that can be given to a token)\n',
      );
    });

    it('refuses a token value as an argument to revoke, and a create without exactly one of --role and --scope', async () => {
      const byValue = await command(['token', 'revoke', c.rootToken], env);
      expect(byValue.code).to.equal(2);
      expect(byValue.stderr).to.include('never the token itself').and.not.include(c.rootToken);
      expect((await command(['token', 'create'], env)).code).to.equal(2);
      expect(
        (await command(['token', 'create', '--role', 'reader', '--scope', 'a:r'], env)).code,
      ).to.equal(2);
      expect(
        (await command(['token', 'create', '--role', 'reader', '--ttl', 'soon'], env)).code,
      ).to.equal(2);
    });
  });

  describe('export', () => {
    before(async () => {
      for (const [key, value] of Object.entries(AWKWARD))
        await c.put(`quoting/x/${key}`, value, 'secret');
    });
    const expected = Object.fromEntries(
      Object.entries(AWKWARD).map(([k, v]) => [k.toUpperCase(), v]),
    );

    it('json: one object of the variables', async () => {
      const out = await command(['export', '--ns', 'quoting/x', '--format', 'json'], env);
      expect(out.code).to.equal(0);
      expect(JSON.parse(out.stdout)).to.deep.equal(expected);
    });

    it('shell: read back exactly by sh', async () => {
      const out = await command(['export', '--ns', 'quoting/x', '--format', 'shell'], env);
      const script = `${out.stdout}\nnode -e 'process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(Object.keys(expected))}.map((k) => [k, process.env[k]]))))'`;
      const back = execFileSync('sh', ['-c', script], {
        env: { PATH: process.env.PATH },
      }).toString();
      expect(JSON.parse(back)).to.deep.equal(expected);
      expect(out.stdout).not.to.include('$(');
    });

    it("dotenv: read back exactly by Node's own parser, and refuses a value it cannot quote", async () => {
      const out = await command(
        [
          'export',
          '--ns',
          'quoting/x',
          '--format',
          'dotenv',
          '--only',
          'plain',
          '--only',
          'single',
          '--only',
          'double',
          '--only',
          'dollar',
          '--only',
          'backslash',
          '--only',
          'lines',
          '--only',
          'unicode',
          '--only',
          'empty',
        ],
        env,
      );
      expect(out.stderr).to.equal('');
      const { CRLF: _, ...readable } = expected;
      expect(parseEnv(out.stdout)).to.deep.equal(readable);
      const crlf = await command(['export', '--ns', 'quoting/x'], env);
      expect(crlf.code).to.equal(1);
      expect(crlf.stderr).to.include('CRLF').and.include('carriage return');
      // A ' with any of " \ $ ` cannot be quoted for both Node's parser and a shell: refused, never
      // written in double quotes or backticks that a shell sourcing the file would run.
      for (const value of [
        `it's "all" \`three\``,
        `it's "quoted"`,
        "it's $(touch pwned)",
        "it's `touch pwned`",
        "it's C:\\new",
      ]) {
        await c.put('quoting/y/all', value, 'secret');
        const refused = await command(['export', '--ns', 'quoting/y'], env);
        expect(refused.code, value).to.equal(1);
        expect(refused.stderr).to.include('ALL').and.include('--format json');
        expect(refused.stdout).to.equal('');
      }
    });

    it('dotenv: read back exactly by a shell that sources the file, running nothing', async () => {
      await c.put('quoting/z/mixed', "it's\nfine, isn't it", 'secret');
      const keys = [
        'plain',
        'single',
        'double',
        'dollar',
        'backslash',
        'lines',
        'unicode',
        'empty',
      ];
      const file = join(dir, 'sourced.env');
      const out = await command(
        [
          'export',
          '--ns',
          'quoting/x',
          '--ns',
          'quoting/z',
          ...keys.flatMap((k) => ['--only', k]),
          '--only',
          'mixed',
        ],
        env,
      );
      expect(out.stderr).to.equal('');
      writeFileSync(file, out.stdout);
      const names = [...keys.map((k) => k.toUpperCase()), 'MIXED'];
      const back = execFileSync(
        'sh',
        [
          '-c',
          `set -a; . "$1"; node -e 'process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(names)}.map((k) => [k, process.env[k]]))))'`,
          'sh',
          file,
        ],
        { env: { PATH: process.env.PATH }, cwd: dir },
      ).toString();
      const { CRLF: _, ...readable } = expected;
      expect(JSON.parse(back)).to.deep.equal({ ...readable, MIXED: "it's\nfine, isn't it" });
      expect(parseEnv(out.stdout)).to.deep.equal(JSON.parse(back));
    });
  });

  it('answers --help for every command, with examples', async () => {
    for (const args of [
      ['run', '--help'],
      ['export', '--help'],
      ['kv', '--help'],
      ['token', '--help'],
      ['whoami', '--help'],
      ['help', 'kv'],
    ]) {
      const help = await command(args, {});
      expect(help.code, args.join(' ')).to.equal(0);
      expect(help.stdout, args.join(' ')).to.match(/^usage: coffer /);
      if (args[0] !== 'whoami') expect(help.stdout, args.join(' ')).to.include('examples:');
    }
    const top = await command(['--help'], {});
    for (const name of ['run', 'export', 'kv', 'token', 'whoami', 'serve', 'operator', 'audit'])
      expect(top.stdout).to.include(`  ${name} `);
  });

  it('says what went wrong in one plain line: an unknown option, a missing value, an existing file, both credentials, a --ttl too long, a role in use, cas=0 on a delete', async () => {
    const unknown = await command(['kv', 'get', 'team/app/log_level', '--bogus'], env);
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.equal(
      'coffer: unknown option --bogus (--help lists what this command takes)\n',
    );
    const missing = await command(['token', 'create', '--role', 'reader', '--ttl'], env);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.equal('coffer: --ttl needs a value (--help says which)\n');
    // A value that starts with a dash is not taken for one without '=': said so, not "takes no value".
    const dashed = await command(
      ['kv', 'meta', 'team/app/db_password', '--max-versions', '-1'],
      env,
    );
    expect([dashed.code, dashed.stderr]).to.deep.equal([
      2,
      'coffer: --max-versions needs a value, and the next argument starts with -: write --max-versions=VALUE if it is the value\n',
    ]);
    const flag = await command(['kv', 'ls', '--json=yes'], env);
    expect([flag.code, flag.stderr]).to.deep.equal([2, 'coffer: --json takes no value\n']);
    const both = await command(['whoami'], {
      ...env,
      COFFER_JWT_FILE: join(dir, 'jwt'),
      COFFER_LOGIN_ROLE: 'pods',
    });
    expect(both.code).to.equal(2);
    expect(both.stderr).to.equal(
      'coffer: COFFER_TOKEN and COFFER_JWT_FILE are both set: use a token or a JWT login, not both (unset one)\n',
    );
    const long = await command(['token', 'create', '--role', 'reader', '--ttl', '3650d'], env);
    expect(long.code).to.equal(2);
    expect(long.stderr).to.match(
      /^coffer: --ttl 3650d: longer than this token may live; at most \d+d \(\d+ s\) here/,
    );
    expect(
      (
        await c.call('PUT', '/v1/sys/roles/held-role', {
          json: { rules: [{ namespaces: ['x'], actions: ['read'], types: ['config'] }] },
        })
      ).status,
    ).to.be.oneOf([200, 201]);
    await c.token({ role: 'held-role' });
    const held = await command(['role', 'rm', 'held-role'], env);
    expect(held.stderr).to.include('coffer role rm held-role --force');
    expect(held.stderr).not.to.include('delete with force=true');
    const existing = join(dir, 'taken.snap');
    writeFileSync(existing, 'mine');
    const over = await command(['operator', 'snapshot', '--out', existing], {
      COFFER_DATA_DIR: c.config.data_dir,
      COFFER_MASTER_KEY_FILE: c.config.master_key_file,
    });
    expect(over.code).to.equal(2);
    expect(over.stderr).to.equal(
      `coffer: --out ${existing}: it exists already: name another file, or remove it first\n`,
    );
    const cas = await c.call('DELETE', '/v1/kv/team/app/log_level?cas=0');
    expect(cas.status).to.equal(400);
    expect(cas.body.detail).to.match(
      /^cas=0 \(only if the key is absent\) does not apply to a delete/,
    );
  });
});
