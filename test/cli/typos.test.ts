import { expect } from 'chai';
import { command } from '../support/process.js';

/** A mistyped command or option is one line naming the mistake and the nearest real one, exit 2. */
describe('the coffer command and a typo', function () {
  this.timeout(60_000);
  const env = { COFFER_ADDR: 'http://127.0.0.1:9', COFFER_TOKEN: 'cfr_unused' };

  it('coffer --help names every token command, revoke-self and renew too', async () => {
    const help = await command(['--help'], env);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.match(/token +create, ls and revoke tokens; revoke-self and renew/);
  });

  for (const [args, says] of [
    [['tokn', 'ls'], 'coffer tokn: no such command — did you mean token? (coffer --help)'],
    [['operator', 'rotat'], 'coffer operator rotat: no such command — did you mean rotate?'],
    [['audit', 'verfy'], 'coffer audit verfy: no such command — did you mean verify?'],
    [['kv', 'gte', 'a/b'], 'coffer kv gte: no such command — did you mean get?'],
    [['token', 'lss'], 'coffer token lss: no such command — did you mean ls?'],
    [['kv', 'put', 'a/b', 'v', '--typ', 'config'], 'unknown option --typ — did you mean --type?'],
    [['kv', 'get', 'a/b', '--verison', '2'], 'unknown option --verison — did you mean --version?'],
    [['kv', 'ls', '--jsn'], 'unknown option --jsn — did you mean --json?'],
    [['frobnicate'], 'coffer frobnicate: no such command (coffer --help)'],
  ] as const)
    it(`coffer ${args.join(' ')}`, async () => {
      const got = await command([...args], env);
      expect(got.code, got.stderr).to.equal(2);
      const lines = got.stderr.trim().split('\n');
      expect(lines, got.stderr).to.have.length(1);
      expect(lines[0]).to.include(says);
      expect(got.stdout).to.equal('');
    });
});
