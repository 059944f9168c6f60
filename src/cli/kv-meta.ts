/**
 * `coffer kv meta NS/KEY`: a key's own metadata — its free string fields, the most versions it keeps and
 * whether its writes must name the version they replace (PATCH /v1/kv/{ns}/{key}). Without a change it
 * prints them; `--set NAME=VALUE` and `--unset NAME` change single fields (the map is read and written
 * whole: a change made by someone else in between is replaced), `--max-versions N` and
 * `--cas-required true|false` set the others.
 */
import type { Coffer } from '../client/coffer.js';
import type { CommandIo } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';

export interface MetaOptions {
  readonly set?: readonly string[];
  readonly unset?: readonly string[];
  readonly maxVersions?: string;
  readonly casRequired?: string;
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
        };
  if (o.json) io.write(`${JSON.stringify(shown, null, 2)}\n`);
  else {
    const fields = Object.entries(shown.custom_metadata);
    io.write(
      [
        `versions kept: ${shown.max_versions === 0 ? 'no limit' : shown.max_versions}`,
        `check-and-set required: ${shown.cas_required ? 'yes' : 'no'}`,
        `metadata:${fields.length === 0 ? ' none' : ''}`,
        ...fields.map(([name, value]) => `  ${name}=${value}`),
        '',
      ].join('\n'),
    );
  }
  return EXIT.ok;
}
