/**
 * `coffer kv get|put|ls|rm|undelete|destroy|rollback|versions|meta`: keys for people, through the client. A key is named by its path,
 * NAMESPACE/KEY (payments/prod/db_password); the last segment is the key.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Coffer } from '../client/coffer.js';
import { isNamespace, isSegment } from '../model/names.js';
import { type CommandIo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { fileProblem } from './file-errors.js';
import { keyMeta } from './kv-meta.js';
import { printable } from './printable.js';
import { connect, explain } from './session.js';
import { noSuchCommand, optionSuggester } from './suggest.js';
import { table } from './table.js';

export const KV_HELP = `usage: coffer kv <command> [options]

  get NS/KEY [--version N] [--json]     print the value (exactly its bytes; a newline added on a terminal)
  put NS/KEY [VALUE | @FILE | -] [--type secret|config] [--if-version N] [--json]
                                        store a new version (a secret unless --type config). The value
                                        comes from the argument, from FILE (@FILE: its bytes exactly), or
                                        from stdin (- or no value; its bytes exactly: printf %s, not echo).
                                        An argument shows in ps and your shell's history: prefer @FILE or stdin
                                        for secrets. --if-version N: only if the latest version is N (0: only
                                        if the key does not exist), else exit 6
  ls [NS] [--prefix P] [--json]         the keys and child namespaces of NS (without NS: the top-level ones);
                                        --prefix P: only those whose names start with P
  rm NS/KEY [--if-version N]            delete the key: it reads as absent, its versions stay in the trash
  trash NS [--json]                     the keys deleted in NS: their latest version and when
  undelete NS/KEY                       take a deleted key out of the trash, as it was
  destroy NS/KEY --yes [--if-version N] erase the key for good, live or deleted: every version (--if-version 0:
                                        only if it is deleted)
  rm|undelete|destroy NS/KEY --versions 1,3 [--yes]
                                        the same to those versions one by one, the others kept: a deleted
                                        version is not read until undeleted, a destroyed one is gone (destroy
                                        needs --yes); naming the latest acts on the key itself
  rollback NS/KEY --version N [--if-version M]
                                        store version N's value again as a new version (over M when given,
                                        else over the latest read: a write meanwhile exits 6)
  meta NS/KEY [--set NAME=VALUE]... [--unset NAME]... [--max-versions N] [--cas-required true|false]
       [--delete-after 12h|0] [--json]
                                        the key's own metadata, changed when asked: its fields (not secret:
                                        whoever may list the key sees them), the most versions it keeps (0: no
                                        limit; the next write destroys the oldest beyond it), whether every
                                        write must name the version it replaces (--if-version), and how long
                                        after it is written each new version is deleted (s, m, h or d; 0:
                                        never; undelete brings one back for good)
  versions NS/KEY [--json]              the key's versions, oldest first, each deleted or destroyed alone
                                        marked (and when the key was deleted, if it is)

examples:
  printf %s "$PASSWORD" | coffer kv put payments/prod/db_password
  coffer kv put payments/prod/tls_cert @cert.pem
  coffer kv put payments/prod/log_level info --type config
  coffer kv get payments/prod/db_password --version 2
  coffer kv ls payments --json | jq -r '.keys[]'
  coffer kv ls payments/prod --prefix db_
  coffer kv rm payments/prod/db_password && coffer kv undelete payments/prod/db_password
  coffer kv rollback payments/prod/db_password --version 3
`;

/** What `coffer kv` does (its switch below; a typo is told the nearest). */
const KV_COMMANDS = [
  'get',
  'put',
  'ls',
  'rm',
  'undelete',
  'destroy',
  'trash',
  'meta',
  'rollback',
  'versions',
];

/** NS/KEY: the namespace and the key. */
function keyPath(path: string | undefined): { namespace: string; key: string } {
  const at = path?.lastIndexOf('/') ?? -1;
  if (path === undefined || at <= 0 || at === path.length - 1)
    throw new CliError(
      `expected NAMESPACE/KEY, such as payments/prod/db_password${path ? `, not ${path}` : ''}`,
      EXIT.usage,
    );
  const namespace = path.slice(0, at);
  const key = path.slice(at + 1);
  // Checked here, as the server would: a bad name is the command's mistake (exit 2), not a server's 400.
  const bad = !isNamespace(namespace)
    ? { name: namespace, what: 'namespace' }
    : !isSegment(key)
      ? { name: key, what: 'key' }
      : undefined;
  if (bad !== undefined)
    throw new CliError(
      `${printable(path)}: ${printable(bad.name)} is not a valid ${bad.what} name (letters, digits, ., _ and -, up to 128 each; a namespace is up to 16 of them joined by /)`,
      EXIT.usage,
    );
  return { namespace, key };
}

function version(text: string | undefined, option: string, min = 1): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,10}$/.test(text) || Number(text) < min)
    throw new CliError(
      `${option} ${text}: a version number${min === 0 ? ' (0: only if absent)' : ''}`,
      EXIT.usage,
    );
  return Number(text);
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

export async function kvCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  const parse = () =>
    parseArgs({
      args,
      allowPositionals: true,
      options: KV_OPTIONS,
    });
  const KV_OPTIONS = {
    json: { type: 'boolean' },
    version: { type: 'string' },
    type: { type: 'string' },
    'if-version': { type: 'string' },
    versions: { type: 'string' },
    set: { type: 'string', multiple: true },
    unset: { type: 'string', multiple: true },
    'max-versions': { type: 'string' },
    'cas-required': { type: 'string' },
    'delete-after': { type: 'string' },
    prefix: { type: 'string' },
    yes: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  } as const;
  try {
    parsed = parse();
  } catch (err) {
    throw argumentsError(err, optionSuggester(Object.keys(KV_OPTIONS)));
  }
  const { positionals, values: o } = parsed;
  const [command, path, ...rest] = positionals;
  if (o.help || command === undefined) {
    io.write(KV_HELP);
    return o.help ? EXIT.ok : EXIT.usage;
  }
  const coffer = connect(io.env);
  const what = path ?? 'the top-level namespaces';
  try {
    switch (command) {
      case 'get':
        return await get(coffer, io, path, o.version, o.json === true);
      case 'put':
        return await put(coffer, io, path, rest, o.type, o['if-version'], o.json === true);
      case 'ls':
        return await list(coffer, io, path, o.prefix, o.json === true);
      case 'rm':
      case 'undelete':
      case 'destroy':
        if (o.versions === undefined) break;
        if (command === 'destroy' && o.yes !== true)
          throw new CliError(
            `destroy erases versions ${o.versions} of ${path} for good, and nothing brings them back: add --yes`,
            EXIT.usage,
          );
        return await changeVersions(coffer, io, command, path, o.versions, o.json === true);
    }
    switch (command) {
      case 'rm': {
        const { namespace, key } = keyPath(path);
        const ifVersion = version(o['if-version'], '--if-version');
        await coffer.delete(namespace, key, ifVersion === undefined ? {} : { ifVersion });
        if (o.json !== true)
          io.write(
            `deleted ${namespace}/${key}: in the trash (coffer kv undelete ${namespace}/${key} brings it back)\n`,
          );
        return EXIT.ok;
      }
      case 'trash': {
        if (path === undefined) throw new CliError('trash NS: name the namespace', EXIT.usage);
        const keys: Awaited<ReturnType<Coffer['trash']>>['keys'] = [];
        let cursor: string | undefined;
        do {
          const page = await coffer.trash(path, cursor === undefined ? {} : { cursor });
          keys.push(...page.keys);
          cursor = page.next_cursor ?? undefined;
        } while (cursor !== undefined);
        io.write(
          o.json
            ? json({ namespace: path, keys })
            : `${table(
                ['KEY', 'VERSION', 'TYPE', 'DELETED'],
                keys.map((k) => [k.key, String(k.version), k.type, k.deleted_at]),
              )}\n`,
        );
        return EXIT.ok;
      }
      case 'undelete': {
        const { namespace, key } = keyPath(path);
        const info = await coffer.undelete(namespace, key);
        io.write(
          o.json
            ? json(info)
            : `restored ${namespace}/${key}: its latest version is ${info.version} (${info.type})\n`,
        );
        return EXIT.ok;
      }
      case 'destroy': {
        const { namespace, key } = keyPath(path);
        if (o.yes !== true)
          throw new CliError(
            `destroy erases every version of ${namespace}/${key} for good, and nothing brings them back: add --yes`,
            EXIT.usage,
          );
        const ifVersion = version(o['if-version'], '--if-version', 0);
        await coffer.destroy(namespace, key, ifVersion === undefined ? {} : { ifVersion });
        if (o.json !== true) io.write(`destroyed ${namespace}/${key}: every version erased\n`);
        return EXIT.ok;
      }
      case 'meta': {
        const { namespace, key } = keyPath(path);
        return await keyMeta(coffer, io, namespace, key, {
          ...(o.set ? { set: o.set } : {}),
          ...(o.unset ? { unset: o.unset } : {}),
          ...(o['max-versions'] === undefined ? {} : { maxVersions: o['max-versions'] }),
          ...(o['cas-required'] === undefined ? {} : { casRequired: o['cas-required'] }),
          ...(o['delete-after'] === undefined ? {} : { deleteAfter: o['delete-after'] }),
          json: o.json === true,
        });
      }
      case 'rollback':
        return await rollback(coffer, io, path, o.version, o['if-version'], o.json === true);
      case 'versions': {
        const { namespace, key } = keyPath(path);
        const list = await coffer.versions(namespace, key);
        io.write(
          o.json
            ? json(list)
            : `${table(
                ['VERSION', 'TYPE', 'CREATED', 'STATE'],
                list.versions.map((v) => [
                  String(v.version),
                  v.type,
                  v.created_at,
                  v.destroyed
                    ? 'destroyed'
                    : v.deleted_at
                      ? `deleted ${v.deleted_at}`
                      : v.deletes_at
                        ? `deleted from ${v.deletes_at}`
                        : '',
                ]),
              )}\n${list.deleted_at ? `deleted at ${list.deleted_at} (coffer kv undelete ${namespace}/${key} brings it back)\n` : ''}`,
        );
        return EXIT.ok;
      }
      default:
        throw noSuchCommand('kv', command, KV_COMMANDS);
    }
  } catch (err) {
    throw explain(err, coffer, what);
  }
}

async function get(
  coffer: Coffer,
  io: CommandIo,
  path: string | undefined,
  v: string | undefined,
  asJson: boolean,
) {
  const { namespace, key } = keyPath(path);
  const wanted = version(v, '--version');
  const entry = await coffer.get(namespace, key, wanted === undefined ? {} : { version: wanted });
  io.write(asJson ? json(entry) : io.tty ? `${entry.value}\n` : entry.value);
  return EXIT.ok;
}

async function put(
  coffer: Coffer,
  io: CommandIo,
  path: string | undefined,
  rest: string[],
  type: string | undefined,
  ifVersionText: string | undefined,
  asJson: boolean,
) {
  const { namespace, key } = keyPath(path);
  if (rest.length > 1)
    throw new CliError('put takes one value (quote it, or use @FILE or stdin)', EXIT.usage);
  if (type !== undefined && type !== 'secret' && type !== 'config')
    throw new CliError(`--type ${type}: secret or config`, EXIT.usage);
  const ifVersion = version(ifVersionText, '--if-version', 0);
  const source = rest[0];
  let value: string;
  if (source === undefined || source === '-') value = (await io.stdin()).toString('utf8');
  else if (source.startsWith('@')) {
    try {
      value = await readFile(source.slice(1), 'utf8');
    } catch (err) {
      throw new CliError(
        `${source.slice(1)}: cannot read it (${fileProblem(err, 'unreadable')})`,
        EXIT.usage,
      );
    }
  } else value = source;
  const info = await coffer.put(namespace, key, value, {
    type: (type as 'secret' | 'config' | undefined) ?? 'secret',
    ...(ifVersion === undefined ? {} : { ifVersion }),
  });
  io.write(
    asJson
      ? json(info)
      : `${info.created ? 'created' : 'stored'} ${namespace}/${key} version ${info.version} (${info.type})\n`,
  );
  return EXIT.ok;
}

/** `rm|undelete|destroy NS/KEY --versions 1,3`: those versions one by one. */
async function changeVersions(
  coffer: Coffer,
  io: CommandIo,
  action: 'rm' | 'undelete' | 'destroy',
  path: string | undefined,
  text: string,
  asJson: boolean,
): Promise<number> {
  const { namespace, key } = keyPath(path);
  if (!/^\d{1,10}(,\d{1,10}){0,999}$/.test(text))
    throw new CliError(`--versions ${text}: version numbers, comma-separated`, EXIT.usage);
  const versions = text.split(',').map((v) => version(v, '--versions')!);
  const change = await coffer.changeVersions(
    namespace,
    key,
    action === 'rm' ? 'delete' : action,
    versions,
  );
  const done = { delete: 'deleted', undelete: 'undeleted', destroy: 'destroyed' }[change.action];
  io.write(
    asJson
      ? json(change)
      : `${change.versions.length > 0 ? `${done} version${change.versions.length > 1 ? 's' : ''} ${change.versions.join(', ')}` : 'nothing to change'} of ${namespace}/${key}; the key is ${change.key_state}\n`,
  );
  return EXIT.ok;
}

/**
 * Version `v`'s value written again as a new version, of its own type, over the latest version read (or
 * `--if-version`): a write in between makes it a 412 (exit 6), never a silent overwrite.
 */
async function rollback(
  coffer: Coffer,
  io: CommandIo,
  path: string | undefined,
  v: string | undefined,
  ifVersionText: string | undefined,
  asJson: boolean,
) {
  const { namespace, key } = keyPath(path);
  const wanted = version(v, '--version');
  if (wanted === undefined)
    throw new CliError('rollback needs --version N: the version to bring back', EXIT.usage);
  const list = await coffer.versions(namespace, key);
  // A deleted key is written again (cas 0: only while it is still deleted).
  const over =
    version(ifVersionText, '--if-version') ?? (list.deleted_at ? 0 : list.current_version);
  const old = await coffer.get(namespace, key, { version: wanted });
  const info = await coffer.put(namespace, key, old.value, { type: old.type, ifVersion: over });
  io.write(
    asJson
      ? json(info)
      : `stored ${namespace}/${key} version ${info.version} (${info.type}): version ${wanted}'s value\n`,
  );
  return EXIT.ok;
}

async function list(
  coffer: Coffer,
  io: CommandIo,
  namespace: string | undefined,
  prefix: string | undefined,
  asJson: boolean,
) {
  const keys: string[] = [];
  const namespaces: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await coffer.list(namespace ?? '', {
      ...(cursor === undefined ? {} : { cursor }),
      ...(prefix === undefined ? {} : { prefix }),
    });
    keys.push(...page.keys);
    namespaces.push(...page.namespaces);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  if (asJson) io.write(json({ namespace: namespace ?? '', keys, namespaces }));
  else for (const name of [...keys, ...namespaces.map((n) => `${n}/`)]) io.write(`${name}\n`);
  return EXIT.ok;
}
