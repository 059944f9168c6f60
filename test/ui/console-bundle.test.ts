import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { build } from 'esbuild';
import { tempDir } from '../support/harness.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * What does not belong in the console's bundle, built from `entry` as `npm run build` builds it (esbuild,
 * TSX): every input but src/ui, the model's plain declarations and Preact. A type import is gone by then,
 * so an import of src/api/ here is one of its code.
 */
async function foreignInputs(root: string, entry: string): Promise<string[]> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    format: 'esm',
    outfile: 'app.js',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs).filter(
    (input) => !/^(src\/ui\/|src\/model\/|node_modules\/preact\/)/.test(input),
  );
}

describe("the web console's bundle", () => {
  it("takes the API's answers as types only: it holds src/ui, the model's declarations it shares and Preact, nothing else", async () => {
    expect(await foreignInputs(REPO, 'src/ui/main.tsx')).to.deep.equal([]);
    // The console does name the API's types (so the check above is about something).
    const typed = readdirSync(join(REPO, 'src/ui')).filter((name) =>
      /import type \{[^}]*\} from '\.\.\/api\/response-schemas\.js'/.test(
        readFileSync(join(REPO, 'src/ui', name), 'utf8'),
      ),
    );
    expect(typed.length).to.be.greaterThan(5);
  });

  it('the check finds a value the console takes from the API', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'src/ui'), { recursive: true });
    mkdirSync(join(dir, 'src/api'), { recursive: true });
    writeFileSync(join(dir, 'src/api/shapes.ts'), 'export const shape = { a: 1 };\n');
    writeFileSync(
      join(dir, 'src/ui/main.tsx'),
      "import { shape } from '../api/shapes.js';\nexport const x = shape.a;\n",
    );
    expect(await foreignInputs(dir, 'src/ui/main.tsx')).to.deep.equal(['src/api/shapes.ts']);
  });
});
