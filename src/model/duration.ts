/** Durations as the settings and the commands write them. */
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90d`, `12h`, `30m`, `45s` in milliseconds; undefined when `text` is not such a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,5})([smhd])$/.exec(text);
  return match ? Number(match[1]) * UNITS[match[2]!]! : undefined;
}
