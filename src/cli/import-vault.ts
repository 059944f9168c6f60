/**
 * `coffer import vault FILE --into NS`: a Vault or OpenBao KV v2 export copied into Coffer, every version,
 * and checked after copying. The export is NDJSON, one version a line, as docs/vault-compatibility.md's
 * script makes it with the Vault CLI:
 *
 *   {"path":"app/db","version":1,"data":{"user":"app","pw":"…"},"created_time":"…","deletion_time":"","destroyed":false}
 *
 * A Vault path `a/b/c` becomes the key `c` in the namespace `NS/a/b` (`NS` for a one-segment path), its
 * value the secret's JSON object, as Coffer's /vault mounts keep one (docs/vault-compatibility.md). Every
 * line and name is checked before anything is written; a key that already exists stops the import before
 * anything is written. Versions are written in order, each only over the one before it (check-and-set);
 * a version without data (destroyed, or deleted: Vault reads neither out) is left out; a secret whose
 * latest version is deleted is deleted (to the trash) once copied. Then every version written is read
 * back and compared.
 */
import { parseArgs } from 'node:util';
import type { Coffer } from '../client/coffer.js';
import { CofferError } from '../client/errors.js';
import { isNamespace, isSegment, RESERVED_KEY } from '../model/names.js';
import type { CommandIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { connect, explain } from './session.js';

export const IMPORT_HELP = `usage: coffer import vault FILE --into NAMESPACE [--type secret|config]

  Copies a Vault or OpenBao KV v2 export (NDJSON, one version a line: path, version, data,
  deletion_time, destroyed; docs/vault-compatibility.md has the script that makes one) into Coffer:
  the Vault path a/b/c becomes the key c in NAMESPACE/a/b, its value the secret's JSON object. Every
  version is written in order, then read back and compared. Nothing is written if a line or a name is
  wrong, or if a key is already there. FILE - reads standard input.

  --type config   store the values as config (default: secret)

example:
  coffer import vault secret-export.ndjson --into migrated
`;

/** One version of one secret, as the export has it. */
interface ExportedVersion {
  readonly path: string;
  readonly version: number;
  readonly data: Record<string, unknown> | null;
  readonly deleted: boolean;
  readonly destroyed: boolean;
}

interface Target {
  readonly namespace: string;
  readonly key: string;
  /** Its versions in the export, oldest first. */
  readonly versions: ExportedVersion[];
}

/** The export's lines, checked: every problem with its line number (none is written if there is one). */
function readExport(text: string): { versions: ExportedVersion[]; problems: string[] } {
  const versions: ExportedVersion[] = [];
  const problems: string[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const at = `line ${i + 1}`;
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(line);
    } catch {
      problems.push(`${at}: not JSON`);
      continue;
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      problems.push(`${at}: not a JSON object`);
      continue;
    }
    const destroyed = v.destroyed === true;
    const deleted = typeof v.deletion_time === 'string' && v.deletion_time !== '';
    const data = v.data;
    // Vault does not read out a deleted version's data: such a line may have none, as a destroyed one.
    const withoutData = destroyed || (deleted && data === null);
    if (typeof v.path !== 'string' || v.path === '') problems.push(`${at}: no path`);
    else if (!Number.isSafeInteger(v.version) || (v.version as number) < 1)
      problems.push(`${at}: version must be a whole number from 1`);
    else if (!withoutData && (data === null || typeof data !== 'object' || Array.isArray(data)))
      problems.push(`${at}: data must be the secret's JSON object (unless destroyed or deleted)`);
    else
      versions.push({
        path: v.path.replace(/^\/+|\/+$/g, ''),
        version: v.version as number,
        data: withoutData ? null : (data as Record<string, unknown>),
        deleted,
        destroyed,
      });
  }
  return { versions, problems };
}

/** The Coffer key each Vault path becomes under `into`, with its versions in order; or the problems. */
function targetsOf(
  versions: readonly ExportedVersion[],
  into: string,
): { targets: Target[]; problems: string[] } {
  const byPath = new Map<string, ExportedVersion[]>();
  for (const v of versions) byPath.set(v.path, [...(byPath.get(v.path) ?? []), v]);
  const targets: Target[] = [];
  const problems: string[] = [];
  for (const [path, list] of byPath) {
    const segments = path.split('/');
    const key = segments.pop()!;
    const namespace = [into, ...segments].join('/');
    if (!isSegment(key) || key === RESERVED_KEY || !isNamespace(namespace)) {
      problems.push(
        `${path}: not a Coffer name as ${namespace}/${key} (segments of A-Z a-z 0-9 . _ -, at most 16)`,
      );
      continue;
    }
    list.sort((a, b) => a.version - b.version);
    const twice = list.find((v, i) => i > 0 && v.version === list[i - 1]!.version);
    if (twice) problems.push(`${path}: version ${twice.version} is in the export twice`);
    else targets.push({ namespace, key, versions: list });
  }
  return { targets, problems };
}

export async function importCommand(args: string[], io: CommandIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  const parse = () =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        into: { type: 'string' },
        type: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  try {
    parsed = parse();
  } catch (err) {
    throw argumentsError(err);
  }
  const { positionals, values: o } = parsed;
  if (o.help) {
    io.write(IMPORT_HELP);
    return EXIT.ok;
  }
  const [source, file] = positionals;
  if (source !== 'vault' || file === undefined || positionals.length > 2) {
    io.tell(IMPORT_HELP);
    return EXIT.usage;
  }
  if (o.into === undefined || !isNamespace(o.into))
    throw new CliError('--into NAMESPACE: the namespace to copy the secrets into', EXIT.usage);
  if (o.type !== undefined && o.type !== 'secret' && o.type !== 'config')
    throw new CliError(`--type ${o.type}: secret or config`, EXIT.usage);
  const type = (o.type ?? 'secret') as 'secret' | 'config';
  let text: string;
  try {
    text = io.read(file);
  } catch {
    throw new CliError(`${file}: cannot read it`, EXIT.usage);
  }
  const read = readExport(text);
  const { targets, problems } = targetsOf(read.versions, o.into);
  const all = [...read.problems, ...problems];
  if (all.length > 0) {
    for (const problem of all.slice(0, 20)) io.tell(`coffer: ${problem}\n`);
    if (all.length > 20) io.tell(`coffer: … and ${all.length - 20} more\n`);
    io.tell('coffer: nothing was imported\n');
    return EXIT.usage;
  }
  const coffer = connect(io.env);
  try {
    return await copy(coffer, io, targets, type);
  } catch (err) {
    throw explain(err, coffer, o.into);
  }
}

async function copy(
  coffer: Coffer,
  io: CommandIo,
  targets: readonly Target[],
  type: 'secret' | 'config',
): Promise<number> {
  // Nothing is written over: every key must be new (a deleted key counts as there).
  const there: string[] = [];
  for (const t of targets) {
    const found = await coffer.versions(t.namespace, t.key).catch((err: unknown) => {
      if (err instanceof CofferError && err.status === 404) return undefined;
      throw err;
    });
    if (found) there.push(`${t.namespace}/${t.key}`);
  }
  if (there.length > 0) {
    io.tell(`coffer: already there, nothing was imported: ${there.join(', ')}\n`);
    return EXIT.conflict;
  }
  const written: { target: Target; version: number; value: string }[] = [];
  let skipped = 0;
  for (const t of targets) {
    let latest = 0;
    for (const v of t.versions) {
      if (v.data === null) {
        skipped++;
        continue;
      }
      const value = JSON.stringify(v.data);
      const info = await coffer.put(t.namespace, t.key, value, { type, ifVersion: latest });
      latest = info.version;
      written.push({ target: t, version: info.version, value });
    }
    if (latest > 0 && t.versions.at(-1)!.deleted)
      await coffer.delete(t.namespace, t.key, { ifVersion: latest });
  }
  // Checked after copying: each version as written.
  const wrong: string[] = [];
  for (const w of written) {
    const entry = await coffer.get(w.target.namespace, w.target.key, { version: w.version });
    if (entry.value !== w.value || entry.type !== type)
      wrong.push(`${w.target.namespace}/${w.target.key} version ${w.version}`);
  }
  const secrets = new Set(written.map((w) => w.target)).size;
  io.write(
    `imported ${secrets} secret${secrets === 1 ? '' : 's'}, ${written.length} version${written.length === 1 ? '' : 's'} (${skipped} without data in the export, destroyed or deleted, left out); read back: ${written.length - wrong.length} as written\n`,
  );
  if (wrong.length === 0) return EXIT.ok;
  io.tell(`coffer: read back other than written: ${wrong.join(', ')}\n`);
  return EXIT.failure;
}
