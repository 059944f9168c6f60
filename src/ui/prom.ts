/**
 * Reading Prometheus' text format (GET /v1/sys/metrics) for the keyring screen's few figures: each sample
 * line `name{label="value",…} number`; comments and blank lines are skipped.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function samplesOf(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (m[2] ?? '').matchAll(LABEL)) labels[name!] = value!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `match`; undefined when there is none. */
export function total(
  samples: readonly Sample[],
  name: string,
  match: Readonly<Record<string, string>> = {},
): number | undefined {
  let sum: number | undefined;
  for (const s of samples)
    if (s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
      sum = (sum ?? 0) + s.value;
  return sum;
}

/** A histogram's mean (its _sum over its _count); undefined before its first observation. */
export function mean(samples: readonly Sample[], histogram: string): number | undefined {
  const count = total(samples, `${histogram}_count`);
  const sum = total(samples, `${histogram}_sum`);
  return count === undefined || sum === undefined || count === 0 ? undefined : sum / count;
}
