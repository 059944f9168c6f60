#!/usr/bin/env node
/**
 * `npm run pack:client [-- --to DIR]`: the client (src/client) and `coffer-run` (src/cli/run-bin.ts) as
 * their own package, `@coffer/client` (packages/client), packed as its own tarball: their JavaScript and the
 * type declarations the client is typed by, and nothing of the server. Prints the tarball's path.
 *
 * Refuses to pack when what it runs imports anything but its own files, Node's built-ins and the package's
 * dependencies: it must load nothing native (@sinclair/typebox gives the types; libsodium-wrappers, which
 * is WebAssembly, seals `coffer-run --fallback`'s copy).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'packages/client');
const { values } = parseArgs({ options: { to: { type: 'string', default: root } } });

const dist = join(pkg, 'dist');
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', pkg], {
  stdio: 'inherit',
});

/** Every file under `dir`. */
const filesIn = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesIn(path) : [path];
  });

/** The specifiers `file` imports (static `import … from`, `export … from`, and `import('…')`). */
const importsOf = (file) =>
  [
    ...readFileSync(file, 'utf8').matchAll(
      /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    ),
  ].map((m) => m[1] ?? m[2]);

// What the package runs: the client and `coffer-run`, and every file they import. Each import must be one
// of its own files or a node: built-in; the server's JavaScript beside them (emitted for the declarations
// the types name) is removed.
const entries = [join(dist, 'client/index.js'), join(dist, 'cli/run-bin.js')];
/** Its dependencies: plain JavaScript (libsodium's is WebAssembly), never a native addon. */
const dependencies = new Set(
  Object.keys(JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).dependencies ?? {}),
);
const reachable = new Set();
for (const queue = [...entries]; queue.length > 0; ) {
  const file = queue.pop();
  if (reachable.has(file)) continue;
  reachable.add(file);
  for (const specifier of importsOf(file)) {
    if (specifier.startsWith('node:')) continue;
    if (dependencies.has(specifier)) continue;
    if (!specifier.startsWith('.')) {
      console.error(
        `pack-client: ${relative(root, file)} imports ${specifier}: the client package may import only its own files, node: built-ins and its dependencies (${[...dependencies].join(', ')})`,
      );
      process.exit(1);
    }
    queue.push(resolve(dirname(file), specifier));
  }
}
for (const file of filesIn(dist)) if (file.endsWith('.js') && !reachable.has(file)) rmSync(file);

const packed = execFileSync(
  'npm',
  ['pack', pkg, '--pack-destination', resolve(values.to), '--json', '--silent'],
  { encoding: 'utf8', cwd: root },
);
console.log(join(resolve(values.to), JSON.parse(packed)[0].filename));
