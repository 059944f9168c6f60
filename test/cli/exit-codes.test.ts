import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { EXIT } from '../../src/cli/exit-codes.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

/** What a literal exit code looks like where a command decides one. */
const LITERAL = [
  /new CliError\([^;]*,\s*[0-9]+,?\s*\)/,
  /\breturn [0-9]+;/,
  /\bprocess\.exit\([0-9]+\)/,
  /\bexitCode = [0-9]+/,
  /\? [0-9]+ : [0-9]+;/,
];

/** src/main.ts and every file of src/cli/, as text with each statement on one line. */
function commandSources(): { file: string; text: string }[] {
  const cli = join(REPO, 'src', 'cli');
  return [join(REPO, 'src', 'main.ts'), ...readdirSync(cli).map((name) => join(cli, name))]
    .filter((file) => file.endsWith('.ts') && !file.endsWith('exit-codes.ts'))
    .map((file) => ({ file, text: readFileSync(file, 'utf8').replace(/\n\s*/g, ' ') }));
}

describe("the coffer command's exit codes", () => {
  it('are named once (cli/exit-codes.ts EXIT) and written by name everywhere a command decides one', () => {
    const sources = commandSources();
    expect(sources.length).to.be.greaterThan(20);
    const literal = sources.flatMap(({ file, text }) =>
      LITERAL.flatMap((pattern) => {
        const m = pattern.exec(text);
        return m ? [`${file.slice(REPO.length)}: ${m[0]}`] : [];
      }),
    );
    expect(literal).to.deep.equal([]);
  });

  it('the check finds a literal code in each form it looks for', () => {
    const forms = [
      "throw new CliError('snapshot needs --out FILE', 2);",
      "throw new CliError(\n  '--to: not a JSON object',\n  2,\n);",
      'return 0;',
      'process.exit(1);',
      'process.exitCode = 2;',
      'return values.help ? 0 : 2;',
    ].map((form) => form.replace(/\n\s*/g, ' '));
    for (const form of forms)
      expect(
        LITERAL.some((p) => p.test(form)),
        form,
      ).to.equal(true);
    expect(LITERAL.some((p) => p.test('return EXIT.ok;'))).to.equal(false);
  });

  it("are the ones docs/cli.md's table lists, each in a row of its own", () => {
    const doc = readFileSync(join(REPO, 'docs', 'cli.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| ([0-9, ]+) \|/gm)].flatMap((m) =>
      m[1]!.split(',').map((code) => Number(code.trim())),
    );
    expect(rows.sort((a, b) => a - b)).to.deep.equal(Object.values(EXIT).sort((a, b) => a - b));
  });
});
