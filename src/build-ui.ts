/**
 * Run by `npm run build` after the compiler: bundles the web console (src/ui, Preact and TSX) with esbuild into
 * dist/ui — app.js, app.css and index.html — served at /ui/ (http/console-static.ts). The output is never
 * committed. esbuild is a build tool only: the server never loads it.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const source = fileURLToPath(new URL('../../src/ui/', import.meta.url));
const out = fileURLToPath(new URL('../ui/', import.meta.url));
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [`${source}main.tsx`],
  // The console's templates are TSX, type-checked by `tsc -p src/ui/tsconfig.json` (npm run build).
  jsx: 'automatic',
  jsxImportSource: 'preact',
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  outfile: `${out}app.js`,
  logLevel: 'warning',
});
for (const file of ['index.html', 'app.css', 'favicon.svg'])
  copyFileSync(`${source}${file}`, `${out}${file}`);
