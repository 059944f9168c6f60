import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

/** The checkout (dist/test/.. /..). */
const REPO = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Biome's binary for this machine: an optional dependency for the platforms the registry carries it for
 * (Linux x64 and arm64); null elsewhere.
 */
function biomeBinary(): string | null {
  try {
    return createRequire(import.meta.url).resolve(
      `@biomejs/cli-${process.platform}-${process.arch}/biome`,
    );
  } catch {
    return null;
  }
}

describe('house style', () => {
  it('the sources, tests and benchmarks are formatted and pass the linter (biome check: 100 columns, recommended rules, sorted imports)', function () {
    this.timeout(60_000);
    const biome = biomeBinary();
    if (biome === null) {
      if (this.test)
        this.test.title += ` [pending: no Biome binary for ${process.platform}-${process.arch}]`;
      this.skip();
    }
    const run = spawnSync(biome, ['check', '--colors=off', '--max-diagnostics=20', '.'], {
      cwd: REPO,
      encoding: 'utf8',
    });
    expect(
      run.status,
      `${run.stdout}\n${run.stderr}\n(npm run format fixes formatting and imports; npm run lint shows the rest)`,
    ).to.equal(0);
  });

  it('no file of src/ is over 400 lines, but the two catalogs (the settings, the response schemas)', () => {
    const CATALOGS = ['src/api/response-schemas.ts', 'src/config/settings.ts'];
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
      );
    const long = files(join(REPO, 'src'))
      .filter((f) => /\.tsx?$/.test(f))
      .map((f) => ({
        file: relative(REPO, f),
        lines: readFileSync(f, 'utf8').split('\n').length - 1,
      }))
      .filter(({ file, lines }) => lines > 400 && !CATALOGS.includes(file));
    expect(long).to.deep.equal([]);
  });
});
