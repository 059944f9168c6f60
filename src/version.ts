/** What `coffer --version` prints: the release, and the commit its build came from (src/build-stamp.ts). */
import { readFileSync } from 'node:fs';

function readJson(relative: string): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as Record<
      string,
      unknown
    >;
  } catch {
    return null;
  }
}

export function versionText(): string {
  const pkg = readJson('../../package.json');
  const build = readJson('../build-info.json');
  const commit =
    typeof build?.commit === 'string'
      ? `commit ${build.commit}${build.modified === true ? ' with uncommitted changes' : ''}`
      : 'commit unknown (built outside a git checkout)';
  return `coffer ${String(pkg?.version ?? 'unknown')} (${commit})`;
}
