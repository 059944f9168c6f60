/**
 * Durations as Vault's API takes and shows them (a `TypeDurationSecond` field): a number of seconds, or a
 * string — digits alone are seconds, `Nd` days, else Go's `time.ParseDuration` form (`1h30m`, `90s`,
 * `1.5h`) — and shown as Go's `Duration.String` (`1h30m0s`, `0s`). Coffer keeps whole seconds.
 */

const GO_UNITS_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * `value` in whole seconds; undefined when it is not a duration, is negative, or is not whole seconds
 * (`1500ms`).
 */
export function vaultDurationSeconds(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  const text = value.trim();
  if (text === '') return 0;
  if (/^[0-9]{1,12}$/.test(text)) return Number(text);
  const days = /^([0-9]{1,6})d$/.exec(text);
  if (days) return Number(days[1]) * 86_400;
  if (text === '0') return 0;
  let rest = text;
  let ms = 0;
  while (rest.length > 0) {
    const part = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)/.exec(rest);
    if (!part) return undefined;
    ms += Number(part[1]) * GO_UNITS_MS[part[2]!]!;
    rest = rest.slice(part[0].length);
  }
  // A sum of fractions may miss a whole number by a rounding error far below a nanosecond.
  const whole = Math.round(ms / 1000);
  return Math.abs(whole * 1000 - ms) < 1e-6 && Number.isSafeInteger(whole) ? whole : undefined;
}

/** Whole seconds as Go's `Duration.String` writes them: `0s`, `45s`, `2m5s`, `1h0m0s`. */
export function goDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const s = seconds % 60;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${s}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m${s}s`;
}
