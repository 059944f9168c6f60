/**
 * `coffer kv meta NS/KEY`: a key's own metadata — its free string fields, the most versions it keeps and
 * whether its writes must name the version they replace (PATCH /v1/kv/{ns}/{key}). Without a change it
 * prints them; `--set NAME=VALUE` and `--unset NAME` change single fields (the map is read and written
 * whole: a change made by someone else in between is replaced), `--max-versions N`,
 * `--cas-required true|false` and `--delete-after 12h` (0: never) set the others.
 */
import type { Coffer } from '../client/coffer.js';
import { parseDuration } from '../model/duration.js';
import type { CommandIo } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';
import { printable } from './printable.js';

export interface MetaOptions {
  readonly set?: readonly string[];
  readonly unset?: readonly string[];
  readonly maxVersions?: string;
  readonly casRequired?: string;
  readonly deleteAfter?: string;
  readonly json: boolean;
}

export async function keyMeta(
  coffer: Coffer,
  io: CommandIo,
  namespace: string,
  key: string,
  o: MetaOptions,
): Promise<number> {
  const change: {
    custom_metadata?: Record<string, string>;
    max_versions?: number;
    cas_required?: boolean;
    delete_version_after?: number;
  } = {};
  if (o.maxVersions !== undefined) {
    if (!/^\d{1,6}$/.test(o.maxVersions))
      throw new CliError(
        `--max-versions ${o.maxVersions}: a number of versions (0: no limit)`,
        EXIT.usage,
      );
    change.max_versions = Number(o.maxVersions);
  }
  if (o.casRequired !== undefined) {
    if (o.casRequired !== 'true' && o.casRequired !== 'false')
      throw new CliError(`--cas-required ${o.casRequired}: true or false`, EXIT.usage);
    change.cas_required = o.casRequired === 'true';
  }
  if (o.deleteAfter !== undefined) {
    const ms = o.deleteAfter === '0' ? 0 : parseDuration(o.deleteAfter);
    if (ms === undefined)
      throw new CliError(
        `--delete-after ${o.deleteAfter}: a duration such as 45s, 30m, 12h or 7d (0: never)`,
        EXIT.usage,
      );
    change.delete_version_after = ms / 1000;
  }
  const now = await coffer.versions(namespace, key);
  if ((o.set?.length ?? 0) > 0 || (o.unset?.length ?? 0) > 0) {
    const custom: Record<string, string> = { ...now.custom_metadata };
    for (const name of o.unset ?? []) delete custom[name];
    for (const pair of o.set ?? []) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new CliError(`--set ${pair}: NAME=VALUE`, EXIT.usage);
      custom[pair.slice(0, at)] = pair.slice(at + 1);
    }
    change.custom_metadata = custom;
  }
  const shown =
    Object.keys(change).length > 0
      ? await coffer.setMetadata(namespace, key, change)
      : {
          namespace,
          key,
          custom_metadata: now.custom_metadata,
          max_versions: now.max_versions,
          cas_required: now.cas_required,
          delete_version_after: now.delete_version_after,
        };
  if (o.json) io.write(`${JSON.stringify(shown, null, 2)}\n`);
  else {
    const fields = Object.entries(shown.custom_metadata);
    io.write(
      [
        `versions kept: ${shown.max_versions === 0 ? 'no limit' : shown.max_versions}`,
        `check-and-set required: ${shown.cas_required ? 'yes' : 'no'}`,
        `versions deleted after: ${shown.delete_version_after === 0 ? 'never' : inUnits(shown.delete_version_after)}`,
        `metadata:${fields.length === 0 ? ' none' : ''}`,
        // Written by whoever may write the key: shown as text, never as terminal controls.
        ...fields.map(([name, value]) => `  ${printable(name)}=${printable(value)}`),
        '',
      ].join('\n'),
    );
  }
  return EXIT.ok;
}

/** Seconds in the largest unit `--delete-after` takes that holds them whole: `12h`, `90m`, `45s`. */
function inUnits(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
  ] as const)
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  return `${seconds}s`;
}
