/**
 * The V8 flags a server process runs with. One: `--no-allocation-site-pretenuring`. With it on (V8's
 * default), V8 may decide during a run that the objects made at some site of the request path live long,
 * and make them in the old generation from then on; whatever young objects those point to then live
 * until the next full collection, so each scavenge copies and promotes more. Which way V8 decides
 * depended on the heap: with 1,000 change streams open, most runs promoted about 600 KB a scavenge
 * against 262 KB without them, and reads paid for it. With it off, 120 KB with or without them; streams
 * then cost reads half as much, and reads and writes with none no less (docs/performance.md).
 */
export const COLLECTOR_FLAGS: readonly string[] = ['--no-allocation-site-pretenuring'];

/** The worker's node arguments: the supervisor's own, and the collector's flags. */
export function workerExecArgv(own: readonly string[]): string[] {
  return [...own, ...COLLECTOR_FLAGS.filter((flag) => !own.includes(flag))];
}
