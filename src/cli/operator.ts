/**
 * `coffer operator status | rotate | rewrap [--retire] [--batch-size N] | migrate-key --to FILE` — key management against a
 * running server (see cli/client.ts). Rewrap shows a progress bar on a terminal (done/total, rate, ETA)
 * and a progress line every few seconds otherwise.
 */
import { readFileSync } from 'node:fs';
import { type FileHandle, open as openFile, rm } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { ENV_SETTINGS, loadConfig } from '../config/load.js';
import { KEY_PROVIDERS } from '../keys/registry.js';
import {
  copyStore,
  restoreSnapshot,
  SnapshotError,
  type SnapshotSummary,
  writeSnapshot,
} from '../operator/snapshot.js';
import { openStorage, type StorageSettings } from '../storage/registry.js';
import { type ApiClient, CliError, clientFromEnv } from './client.js';

export const OPERATOR_USAGE = `usage: coffer operator <command>

  status                          provider, keyring versions, the active one, records each wraps
  rotate                          add a keyring version; new writes use it at once, on every process
  rewrap [--batch-size N] [--retire]
                                  rewrap every record onto the active version (online, resumable);
                                  --retire then removes versions that wrap nothing
  migrate-key --to FILE           rewrap the keyring under another master key or provider; FILE is JSON
                                  with the new provider's settings as in the configuration file, e.g.
                                  {"key_provider":"aws-kms","kms":{"key_id":"alias/coffer"}}
                                  (paths are the server's; a PIN or passphrase only ever by file)
  snapshot --out FILE             a consistent copy of the store's sealed records, taken while it serves
  restore --from FILE             check a snapshot whole, then write it into an empty store
  migrate-storage --to TARGET     copy the store into an empty one: postgres (the COFFER_PG_* settings,
                                  or --to postgres:URL) or lmdb:DIR (a data directory); --resume goes
                                  on with a copy that was cut off

Environment: COFFER_ADDR (default http://127.0.0.1:8750), COFFER_TOKEN (the root token). snapshot and
restore open the store itself, with the server's settings (COFFER_STORAGE, COFFER_DATA_DIR, COFFER_PG_URL…),
and need no token and no master key: nothing is decrypted.
`;

/** Each command's own help (`coffer operator <command> --help`). */
const COMMAND_HELP: Record<string, string> = {
  status: `usage: coffer operator status

Shows the master key (provider, and when it was last migrated), the keyring versions with the records each
wraps, and which one is active. Needs a token with the read_keyring privilege (root or auditor).
`,
  rotate: `usage: coffer operator rotate

Adds a keyring version and makes it active: new writes on every server process use it at once. Existing
records keep theirs until a rewrap. Root only.
`,
  rewrap: `usage: coffer operator rewrap [--batch-size N] [--retire]

Rewraps every record onto the active keyring version, online and resumable, showing progress.
  --batch-size N   records per transaction, 1 to 10000 (default 500)
  --retire         afterwards, remove the keyring versions that no longer wrap anything
Root only.
`,
  'migrate-key': `usage: coffer operator migrate-key --to FILE

Rewraps the keyring under another master key or provider, in one atomic write. FILE is JSON with the new
provider's settings as in the configuration file, e.g.
${KEY_PROVIDERS.map((p) => `  ${JSON.stringify(p.example)}`).join('\n')}
Providers:
${KEY_PROVIDERS.map((p) => `  ${p.name.padEnd(8)} ${p.summary}`).join('\n')}
Paths are the server's (relative ones are made absolute from this directory). A key file must exist
already; a PIN or passphrase is only ever read from a file. Afterwards, configure the server with the
variables it prints before the next restart. Root only.
`,
  snapshot: `usage: coffer operator snapshot --out FILE

Writes every record of the store, as stored (sealed or authenticated; nothing is decrypted), from one
consistent state of it while servers go on serving, with a checksum and counts at the end. FILE is created
owner-only and must not exist. Opens the store with the server's settings (COFFER_STORAGE, COFFER_DATA_DIR,
COFFER_PG_URL…); needs no token and no master key. The audit log's files are not part of it: copy the audit
directories as well.
`,
  'migrate-storage': `usage: coffer operator migrate-storage --to postgres[:URL] | lmdb:DIR [--resume]

Copies every record of the store the settings name (COFFER_STORAGE, COFFER_DATA_DIR, COFFER_PG_URL…), from
one consistent state of it, into an empty store: PostgreSQL (with --to postgres the COFFER_PG_* settings,
with --to postgres:URL that URL — never with a password in it: use PGPASSWORD or ~/.pgpass — and
COFFER_PG_SCHEMA) or LMDB in the data directory DIR. Records are copied as stored (nothing decrypted; no
token or master key needed) in key order, the keyring last, and the target's records are counted
afterwards. Stop the servers first, or the copy misses writes made after it began; then start them on the
new store with the same master key.
--resume goes on with a copy that was cut off: the target holds no keyring record yet, and what it holds
must equal the store's records up to its last one (checked before anything is written); the copy goes on
after it. The audit directories are not part of it: keep them.
`,
  restore: `usage: coffer operator restore --from FILE

Checks the snapshot whole (format, counts, checksum), then writes it into the store the settings name
(COFFER_STORAGE, COFFER_DATA_DIR, COFFER_PG_URL…), which must be empty — from LMDB to PostgreSQL or back.
Servers need the snapshot's master key to open the result. A restore cut off before its end leaves a store
to empty and restore again.
`,
};

interface KeyringStatus {
  provider: string;
  wrapped_by: string;
  migrated_at: string | null;
  active_version: number;
  versions: {
    version: number;
    created_at: string;
    active: boolean;
    secrets: number;
    configs: number;
  }[];
  unreadable: number;
}

interface RewrapView {
  running: boolean;
  target_version: number | null;
  total: number;
  examined: number;
  rewrapped: number;
  failed: number;
  started_at: string | null;
  finished_at: string | null;
}

type Out = (line: string) => void;

async function status(api: ApiClient, out: Out): Promise<void> {
  const s = await api.call<KeyringStatus>('GET', '/v1/sys/keyring');
  out(`provider: ${s.provider}   active version: ${s.active_version}`);
  out(
    `master key: ${s.wrapped_by}${s.migrated_at === null ? '' : ` (migrated at ${s.migrated_at})`}`,
  );
  out(
    `${'version'.padEnd(9)}${'created'.padEnd(26)}${'secrets'.padStart(10)}${'configs'.padStart(10)}`,
  );
  for (const v of s.versions) {
    out(
      `${`${v.version}${v.active ? ' *' : ''}`.padEnd(9)}${v.created_at.padEnd(26)}${String(v.secrets).padStart(10)}${String(v.configs).padStart(10)}`,
    );
  }
  if (s.unreadable > 0)
    out(`WARNING: ${s.unreadable} records name no keyring version or do not parse`);
}

async function rotate(api: ApiClient, out: Out): Promise<void> {
  const r = await api.call<{ previous_version: number; active_version: number }>(
    'POST',
    '/v1/sys/keyring/rotate',
  );
  out(
    `rotated: active keyring version ${r.previous_version} -> ${r.active_version}; run "coffer operator rewrap" to move existing records`,
  );
}

async function rewrap(
  api: ApiClient,
  out: Out,
  options: { batchSize?: number; retire: boolean; tty: boolean },
): Promise<void> {
  let view = await api.call<RewrapView>(
    'POST',
    '/v1/sys/keyring/rewrap',
    options.batchSize === undefined ? undefined : { batch_size: options.batchSize },
  );
  out(
    `rewrapping onto keyring version ${view.target_version}${view.examined > 0 ? ` (continuing at ${view.examined})` : ''}`,
  );
  const bar = options.tty
    ? new cliProgress.SingleBar(
        {
          format: '{bar} {value}/{total} records | {rate}/s | ETA {eta_formatted}',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(Math.max(view.total, view.examined), view.examined, { rate: 0 });
  const started = Date.now();
  const firstExamined = view.examined;
  let lastLine = 0;
  while (view.running || view.finished_at === null) {
    await new Promise((r) => setTimeout(r, 250));
    view = await api.call<RewrapView>('GET', '/v1/sys/keyring/rewrap');
    const rate = Math.round(
      ((view.examined - firstExamined) * 1000) / Math.max(1, Date.now() - started),
    );
    if (bar) {
      bar.setTotal(Math.max(view.total, view.examined));
      bar.update(view.examined, { rate });
    } else if (Date.now() - lastLine > 5000) {
      lastLine = Date.now();
      out(
        `progress: ${view.examined}/${view.total} records, ${view.rewrapped} rewrapped, ${rate} records/s`,
      );
    }
    if (!view.running && view.finished_at === null)
      throw new CliError(
        'the rewrap stopped before finishing (see the server log); run the command again to continue',
      );
  }
  bar?.stop();
  out(
    `done: ${view.examined} records examined, ${view.rewrapped} rewrapped, ${view.failed} failed to open or verify`,
  );
  if (view.failed > 0)
    throw new CliError(
      `${view.failed} records failed their integrity check and were left as they are; see the server log`,
    );
  if (options.retire) {
    const r = await api.call<{ retired: number[]; versions: number[] }>(
      'POST',
      '/v1/sys/keyring/retire',
    );
    out(
      r.retired.length > 0
        ? `retired keyring version${r.retired.length > 1 ? 's' : ''} ${r.retired.join(', ')} (no record used ${r.retired.length > 1 ? 'them' : 'it'} any more); versions left in the keyring: ${r.versions.join(', ')}`
        : 'no keyring version could be retired: every older version still wraps records (run a rewrap first)',
    );
  }
}

/** A progress bar on a terminal, a line every few seconds otherwise. */
function progress(out: Out, what: string): (done: number, total?: number) => void {
  const tty = process.stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        { format: `{bar} {value}/{total} ${what}`, stream: process.stderr },
        cliProgress.Presets.shades_classic,
      )
    : null;
  let started = false;
  let lastLine = Date.now();
  return (done, total) => {
    if (bar) {
      if (!started) bar.start(total ?? done, done);
      started = true;
      bar.setTotal(Math.max(total ?? done, done));
      bar.update(done);
      if (total !== undefined && done >= total) bar.stop();
    } else if (Date.now() - lastLine > 5000) {
      lastLine = Date.now();
      out(`progress: ${done}${total === undefined ? '' : `/${total}`} ${what}`);
    }
  };
}

async function snapshot(file: string, out: Out): Promise<void> {
  const storage = await openStorage(loadConfig());
  try {
    let handle: FileHandle;
    try {
      // Owner-only, and never over an existing file.
      handle = await openFile(file, 'wx', 0o600);
    } catch (err) {
      throw new CliError(
        `--out ${file}: ${(err as NodeJS.ErrnoException).code ?? 'cannot create'}`,
        2,
      );
    }
    let summary: SnapshotSummary;
    try {
      summary = await writeSnapshot(storage, handle, Date.now(), progress(out, 'records'));
    } catch (err) {
      // The file is ours (created above, never over another): a snapshot that did not finish goes.
      await handle.close();
      await rm(file, { force: true });
      throw err;
    }
    await handle.close();
    out(
      `snapshot written to ${file}: ${summary.records} records (${Object.entries(summary.kinds)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}), sha256 ${summary.sha256}`,
    );
    out(
      `keyring ${summary.keyring ?? '(none: an empty store)'}; restoring it needs that keyring's master key`,
    );
  } finally {
    await storage.close();
  }
}

async function restore(file: string, out: Out): Promise<void> {
  const storage = await openStorage(loadConfig());
  try {
    const summary = await restoreSnapshot(storage, file, progress(out, 'records'));
    out(`restored ${summary.records} records from ${file} (sha256 ${summary.sha256} checked)`);
  } catch (err) {
    if (err instanceof SnapshotError) throw new CliError(err.message, 1);
    throw err;
  } finally {
    await storage.close();
  }
}

async function migrateStorage(to: string, resume: boolean, out: Out): Promise<void> {
  const config = loadConfig();
  let target: StorageSettings;
  if (to === 'postgres' || to.startsWith('postgres:')) {
    const url = to === 'postgres' ? config.pg_url : to.slice('postgres:'.length);
    // A password on the command line shows in ps and in the shell's history.
    if (to !== 'postgres' && passwordIn(url!))
      throw new CliError(
        '--to postgres:URL must not hold a password (it would show in ps and the shell history): give it in PGPASSWORD or ~/.pgpass, or use --to postgres with COFFER_PG_URL',
        2,
      );
    target = { ...config, storage: 'postgres', ...(url === undefined ? {} : { pg_url: url }) };
  } else if (to.startsWith('lmdb:') && to.length > 'lmdb:'.length) {
    target = { ...config, storage: 'lmdb', data_dir: resolve(to.slice('lmdb:'.length)) };
  } else throw new CliError('--to must be postgres, postgres:URL or lmdb:DIR', 2);
  if (
    target.storage === config.storage &&
    target.storage === 'lmdb' &&
    target.data_dir === config.data_dir
  )
    throw new CliError('--to names the store being copied', 2);
  const source = await openStorage(config);
  try {
    const destination = await openStorage(target);
    try {
      const { records, resumedAfter } = await copyStore(
        source,
        destination,
        progress(out, 'records'),
        { resume },
      );
      const where = target.storage === 'lmdb' ? target.data_dir : 'PostgreSQL';
      out(
        resumedAfter > 0
          ? `resumed after the ${resumedAfter} records an earlier copy left (checked against the store), copied the other ${records - resumedAfter} to ${where}, and counted all ${records} there`
          : `copied ${records} records to ${where} and counted them there`,
      );
      out(
        'start the servers on the new store with the same master key (and keep the audit directories)',
      );
    } catch (err) {
      if (err instanceof SnapshotError) throw new CliError(err.message, 1);
      throw err;
    } finally {
      await destination.close();
    }
  } finally {
    await source.close();
  }
}

/** Whether a postgres:// URL holds a password (user:password@…). */
function passwordIn(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return /:[^/@]*@/.test(url);
  }
}

/** Reads the new provider's settings; relative paths are taken from the current directory. */
function readTarget(file: string): Record<string, unknown> {
  let target: unknown;
  try {
    target = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError(
      `--to ${file}: ${(err as NodeJS.ErrnoException).code ?? 'not a JSON object'}`,
      2,
    );
  }
  if (typeof target !== 'object' || target === null || Array.isArray(target))
    throw new CliError(`--to ${file}: not a JSON object`, 2);
  const absolute = (path: unknown): unknown =>
    typeof path === 'string' && !isAbsolute(path) ? resolve(path) : path;
  const settings = { ...(target as Record<string, unknown>) };
  // The fields every provider says hold a path on the server (`pkcs11.library`: one level down).
  for (const path of KEY_PROVIDERS.flatMap((p) => p.paths)) {
    const [field, inner] = path.split('.') as [string, string | undefined];
    if (inner === undefined) {
      if (field in settings) settings[field] = absolute(settings[field]);
    } else if (typeof settings[field] === 'object' && settings[field] !== null) {
      const nested = { ...(settings[field] as Record<string, unknown>) };
      if (inner in nested) nested[inner] = absolute(nested[inner]);
      settings[field] = nested;
    }
  }
  return settings;
}

async function migrate(api: ApiClient, out: Out, file: string): Promise<void> {
  const target = readTarget(file);
  const r = await api.call<{ from: string; to: string; provider: string }>(
    'POST',
    '/v1/sys/keyring/migrate',
    target,
  );
  out(`migrated: the keyring is now wrapped by ${r.to} (was ${r.from})`);
  out("before the next restart, configure every server with (and remove the old key's settings):");
  for (const line of settingLines(target)) out(`  ${line}`);
  out('until then a restarted server refuses to start and says which key it needs');
}

/** `VARIABLE=value` for each setting of a migrate-key target (the configuration file's names where no variable exists). */
function settingLines(target: Record<string, unknown>): string[] {
  const lines: string[] = [];
  const add = (field: string, value: unknown): void => {
    if (value === null || value === undefined) return;
    const env = ENV_SETTINGS.find((s) => s.field === field)?.env;
    lines.push(
      env === undefined
        ? `${field} = ${JSON.stringify(value)} (in COFFER_CONFIG)`
        : `${env}=${String(value)}`,
    );
  };
  for (const [field, value] of Object.entries(target)) {
    if (typeof value === 'object' && value !== null)
      for (const [sub, inner] of Object.entries(value)) add(`${field}.${sub}`, inner);
    else add(field, value);
  }
  return lines;
}

export async function operatorCommand(
  args: string[],
  out: Out = (l) => process.stdout.write(`${l}\n`),
): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      retire: { type: 'boolean', default: false },
      'batch-size': { type: 'string' },
      to: { type: 'string' },
      out: { type: 'string' },
      from: { type: 'string' },
      resume: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help && command !== undefined && command in COMMAND_HELP) {
    out(COMMAND_HELP[command]!);
    return 0;
  }
  if (values.help || command === undefined) {
    out(OPERATOR_USAGE);
    return values.help ? 0 : 2;
  }
  if (command === 'snapshot') {
    if (values.out === undefined) throw new CliError('snapshot needs --out FILE', 2);
    await snapshot(values.out, out);
    return 0;
  }
  if (command === 'migrate-storage') {
    if (values.to === undefined)
      throw new CliError('migrate-storage needs --to postgres[:URL] or --to lmdb:DIR', 2);
    await migrateStorage(values.to, values.resume === true, out);
    return 0;
  }
  if (command === 'restore') {
    if (values.from === undefined) throw new CliError('restore needs --from FILE', 2);
    await restore(values.from, out);
    return 0;
  }
  const api = clientFromEnv();
  switch (command) {
    case 'status':
      await status(api, out);
      return 0;
    case 'rotate':
      await rotate(api, out);
      return 0;
    case 'rewrap': {
      const batch = values['batch-size'];
      if (batch !== undefined && !/^[1-9][0-9]{0,4}$/.test(batch))
        throw new CliError('--batch-size must be a whole number from 1 to 10000', 2);
      await rewrap(api, out, {
        ...(batch === undefined ? {} : { batchSize: Number(batch) }),
        retire: values.retire,
        tty: process.stdout.isTTY === true,
      });
      return 0;
    }
    case 'migrate-key':
      if (values.to === undefined)
        throw new CliError("migrate-key needs --to FILE (the new provider's settings)", 2);
      await migrate(api, out, values.to);
      return 0;
    default:
      out(OPERATOR_USAGE);
      return 2;
  }
}
