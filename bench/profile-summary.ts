/**
 * Summarizes a V8 .cpuprofile (from node --cpu-prof): the top frames by self time, and self time per
 * package or source area.   node dist/bench/profile-summary.js <file.cpuprofile> [top]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-summary <file.cpuprofile> [top]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

function area(url: string): string {
  if (!url) return '(native / V8)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return 'node core';
  const src = /dist\/(src\/[^/]+)/.exec(url);
  return src ? src[1]! : url;
}

const frames = new Map<string, number>();
const areas = new Map<string, number>();
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const name = `${functionName || '(anonymous)'}  ${url ? `${url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}` : ''}`;
  frames.set(name, (frames.get(name) ?? 0) + us);
  areas.set(area(url), (areas.get(area(url)) ?? 0) + us);
}
const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
console.log(`total sampled: ${(total / 1e6).toFixed(2)} s\n\ntop frames by self time`);
for (const [name, us] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 25)))
  console.log(`${pct(us)}  ${name}`);
console.log('\nself time by area');
for (const [name, us] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 15))
  console.log(`${pct(us)}  ${name}`);
