#!/usr/bin/env node
// `npm start`: builds only when the build is missing or older than a source it is made from (src/, the
// package and compiler settings), so a second start takes no build (about 14 s here); otherwise runs
// `npm run build` as before. Plain JavaScript: it runs before anything is compiled.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const stamp = join(root, 'dist', 'build-info.json');

/** The newest modification time under `path` (a file, or a folder walked whole). */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let most = stat.mtimeMs;
  for (const name of readdirSync(path)) most = Math.max(most, newest(join(path, name)));
  return most;
}

const sources = ['src', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.client.json'];
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const changed = Math.max(...sources.map((s) => newest(join(root, s))));
if (built === 0 || changed > built) {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
}
