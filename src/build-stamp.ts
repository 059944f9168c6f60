/**
 * Run by `npm run build` after the compiler: records which source the build came from
 * (dist/build-info.json, printed by `coffer --version`) and makes the `coffer` entry point executable
 * (the compiler writes it without the run bit, so `npm link` and the package's bin broke after a build).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

function git(...args: string[]): string | null {
  try {
    return execFileSync('git', args, { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return null; // not a git checkout (a packed tarball being built elsewhere), or no git
  }
}

const commit = git('rev-parse', 'HEAD');
const info = {
  commit,
  // Uncommitted changes to tracked files: the build is not exactly that commit.
  modified: commit === null ? null : git('status', '--porcelain', '--untracked-files=no') !== '',
  built_at: new Date().toISOString(),
};
writeFileSync(
  fileURLToPath(new URL('../build-info.json', import.meta.url)),
  `${JSON.stringify(info)}\n`,
);
chmodSync(fileURLToPath(new URL('./main.js', import.meta.url)), 0o755);
