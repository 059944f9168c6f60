/**
 * The V8 flags a server process runs with:
 *
 * - `--no-allocation-site-pretenuring`. With it on (V8's default), V8 may decide during a run that the
 *   objects made at some site of the request path live long, and make them in the old generation from then
 *   on; whatever young objects those point to then live until the next full collection, so each scavenge
 *   copies and promotes more. Which way V8 decides depended on the heap: with 1,000 change streams open,
 *   most runs promoted about 600 KB a scavenge against 262 KB without them, and reads paid for it. With it
 *   off, 120 KB with or without them; streams then cost reads half as much, and reads and writes with none
 *   no less (docs/performance.md).
 * - `--max-semi-space-size=32` (MB; node 20's default is 16). Every request leaves garbage in the young
 *   generation, and a scavenge costs what survives it (the requests in flight), not what it frees: twice
 *   the room, half the scavenges for the same survivors. Measured, two servers loaded at once: reads 1.077,
 *   durable writes 1.054 (64 MB: no better than 32). It costs each worker about 20–50 MB more memory at
 *   its peak under load (docs/deployment.md, docs/performance.md).
 *
 * A flag the operator set (on node's command line or in NODE_OPTIONS), with any value, is left as set.
 */
export const COLLECTOR_FLAGS: readonly string[] = [
  '--no-allocation-site-pretenuring',
  '--max-semi-space-size=32',
];

/** The worker's node arguments: the supervisor's own, and the collector's flags it does not set itself. */
export function workerExecArgv(
  own: readonly string[],
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  const set = new Set([...own, ...nodeOptions.split(/\s+/)].map(flagName));
  return [...own, ...COLLECTOR_FLAGS.filter((flag) => !set.has(flagName(flag)))];
}

/** A flag's name, without its value; V8 reads `_` and `-` in a name alike. */
function flagName(flag: string): string {
  return flag.split('=')[0]!.replaceAll('_', '-');
}
