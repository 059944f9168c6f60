/**
 * This build's release and the commit it came from (src/build-stamp.ts): what `coffer --version` prints and
 * GET /v1/sys/version answers.
 */
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

/** This build: its release, and the commit it came from (null when built outside a git checkout). */
export interface BuildVersion {
  readonly version: string;
  readonly commit: string | null;
  /** Built from a checkout with uncommitted changes. */
  readonly modified: boolean;
}

export function buildVersion(): BuildVersion {
  const pkg = readJson('../../package.json');
  const build = readJson('../build-info.json');
  const commit = typeof build?.commit === 'string' ? build.commit : null;
  return {
    version: String(pkg?.version ?? 'unknown'),
    commit,
    modified: commit !== null && build?.modified === true,
  };
}

/** A build's version in one line: `coffer 0.1.0 (commit 1a2b3c4)`. */
export function versionText({ version, commit, modified }: BuildVersion = buildVersion()): string {
  const from =
    commit !== null
      ? `commit ${commit}${modified ? ' with uncommitted changes' : ''}`
      : 'commit unknown (built outside a git checkout)';
  return `coffer ${version} (${from})`;
}
