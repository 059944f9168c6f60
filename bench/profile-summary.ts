/**
 * Summarizes a V8 .cpuprofile (from node --cpu-prof): the top frames by self time, and self time per
 * package or source area; with patterns after `top`, the share of time spent under (inclusive of callees)
 * any frame whose `function  url` matches each pattern (a regular expression).
 *   node dist/bench/profile-summary.js <file.cpuprofile> [top] [pattern…]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, ...patterns] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-summary <file.cpuprofile> [top] [pattern…]');
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

if (patterns.length > 0) {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n: ProfileNode): string =>
    `${n.callFrame.functionName || '(anonymous)'}  ${n.callFrame.url}`;
  console.log('\ntime under frames matching (inclusive)');
  for (const pattern of patterns) {
    const re = new RegExp(pattern);
    let under = 0;
    for (const [id, us] of selfUs) {
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at))
        if (re.test(label(byId.get(at)!))) {
          under += us;
          break;
        }
    }
    console.log(`${pct(under)}  ${pattern}`);
  }
}
