/**
 * Builds the source of a git commit of this repository in a directory of its own, against this checkout's
 * node_modules (the lockfile has not changed between the commits compared): for benchmarks of a change
 * against the commit before it, and for stores made by an earlier release (test/store/upgrade.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This checkout's root (dist/bench/.. /..). */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Whether `commit` is in this checkout's history (a copy without .git has none). */
export function hasCommit(commit: string): boolean {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: REPO, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Extracts `commit`'s src, bench, test, config and build files into `into` and compiles them there
 * (into/dist). The tests come too: benchmarks use their support (test/support: a JWT issuer, say).
 */
export function buildCommit(commit: string, into: string): void {
  mkdirSync(into, { recursive: true });
  const archive = execFileSync(
    'git',
    ['archive', commit, 'src', 'bench', 'test', 'config', 'package.json', 'tsconfig.json'],
    { cwd: REPO, maxBuffer: 64 << 20 },
  );
  execFileSync('tar', ['-x', '-C', into], { input: archive });
  symlinkSync(join(REPO, 'node_modules'), join(into, 'node_modules'));
  execFileSync(
    process.execPath,
    [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', into],
    { cwd: into },
  );
}
