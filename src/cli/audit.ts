/**
 * `coffer audit verify [files…]` and `coffer audit seal-report [--verify] [--json]`, offline: each reads the
 * same COFFER_* settings as the server and opens the store, the master key and the keyring itself (LMDB
 * allows this while the server runs).
 *
 * verify: checks the audit chains (default: every file in the audit directory) against their checkpoints
 * and the store's record of them; prints "intact: N entries from T1 to T2" or the first broken entry and
 * why (exit 1). Over the whole directory it then says which stored versions the log names (audit/coverage.ts),
 * and exits 1 when any is named by no entry.
 *
 * seal-report: whether every stored version is sealed (audit/seal-report.ts); a table, or JSON with --json;
 * a progress bar on a terminal; exit 0 when there are no anomalies, 1 when there are.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { pino } from 'pino';
import { openAuditLog } from '../app.js';
import { archivedFields, copyArchive, planArchive, removeArchived } from '../audit/archive.js';
import { auditCoverage, type Coverage } from '../audit/coverage.js';
import { forgetArchived, storedChains } from '../audit/database-copy.js';
import { auditFilesIn } from '../audit/files.js';
import { recoverIntents } from '../audit/intent-recovery.js';
import { auditTime } from '../audit/query.js';
import { AuditRegistry, type ChainRecord } from '../audit/registry.js';
import { type VerifyResult, verifyAudit } from '../audit/verify.js';
import { loadConfig } from '../config/load.js';
import type { CofferConfig } from '../config/schema.js';
import { sodiumReady } from '../crypto/aead.js';
import { STORE_FORMAT } from '../crypto/keyring.js';
import { ensureDirectory } from '../directories.js';
import { KeyProviderError } from '../keys/key-provider.js';
import { openKeyProvider, providerConfig } from '../keys/registry.js';
import { type SealReport, sealReport } from '../operator/seal-report.js';
import type { StorageBackend } from '../storage/backend.js';
import { openStorage } from '../storage/registry.js';
import { KEYRING_KEY, KeyringHolder } from '../store/keyring-store.js';
import { CliError } from './client.js';

export const AUDIT_USAGE = `usage: coffer audit <command>

  verify [files…]              check the audit chains and checkpoints offline (default: every file in the
                               audit directory); prints "intact: …" and exits 0, or the first broken entry
                               and exits 1. Over the whole directory it also says which stored versions
                               the log names ("covers: …"), and exits 1 if any has no entry
  archive --before DATE --to DIR
                               move whole audit files whose entries are all older than DATE (ISO 8601)
                               to DIR, after checking the whole log; the move is recorded in the log, so
                               verify still passes and says what was archived
  seal-report [--verify] [--json]
                               check that every stored version is sealed, without decrypting anything
                               (needs no master key); --verify also opens each one in memory (needs the
                               key; no value is printed); exits 1 when it finds anomalies

Reads the server's COFFER_* settings: the data directory, the master key, the audit directory.
`;

type Out = (line: string) => void;

export interface AuditCommandIo {
  readonly out: Out;
  /** Where the progress bar goes when it is a terminal. */
  readonly progress?: NodeJS.WriteStream;
}

export async function auditCommand(
  args: string[],
  io: AuditCommandIo = { out: (l) => process.stdout.write(`${l}\n`), progress: process.stderr },
): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      verify: { type: 'boolean' },
      json: { type: 'boolean' },
      before: { type: 'string' },
      to: { type: 'string' },
    },
  });
  const command = positionals[0];
  if (values.help || (command !== 'verify' && command !== 'seal-report' && command !== 'archive')) {
    io.out(AUDIT_USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  if (command === 'verify') {
    if (values.verify || values.json || values.before || values.to)
      throw new CliError('verify takes only file names', 2);
    return verifyCommand(config, positionals.slice(1), io.out);
  }
  if (command === 'archive') {
    if (values.before === undefined || values.to === undefined || positionals.length > 1)
      throw new CliError('usage: coffer audit archive --before DATE --to DIR', 2);
    const before = auditTime(values.before);
    if (before === undefined)
      throw new CliError(
        `--before ${values.before}: not an ISO 8601 date or time, e.g. 2026-10-01`,
        2,
      );
    return archiveCommand(config, before, resolve(values.to), io.out);
  }
  if (positionals.length > 1)
    throw new CliError('seal-report takes no arguments besides --verify and --json', 2);
  return sealReportCommand(config, values.verify ?? false, values.json ?? false, io);
}

/** Opens the existing store and its keyring; never creates either (nor a master key) for a wrong path. */
async function withKeyring<T>(
  config: CofferConfig,
  work: (storage: StorageBackend, holder: KeyringHolder) => Promise<T>,
): Promise<T> {
  if (!existsSync(config.data_dir))
    throw new CliError(`no Coffer store at ${config.data_dir} (COFFER_DATA_DIR)`, 2);
  await sodiumReady();
  const storage = await openStorage(config);
  try {
    if (!(await storage.get(KEYRING_KEY)))
      throw new CliError(
        `the store at ${config.data_dir} has no keyring: it is not a Coffer store that has been started`,
        2,
      );
    const { provider } = await openKeyProvider(config);
    const { holder } = await KeyringHolder.open(
      storage,
      { provider, config: providerConfig(config) },
      Date.now(),
    );
    return await work(storage, holder);
  } finally {
    await storage.close();
  }
}

/** The store's record of the audit chains, which a store not yet upgraded (format 1) holds unsealed. */
function chainRegistry(
  config: CofferConfig,
  storage: StorageBackend,
  holder: KeyringHolder,
): Promise<ChainRecord[]> {
  if (holder.current().storeFormat < STORE_FORMAT) {
    throw new CliError(
      `the store at ${config.data_dir} was written by an earlier release (store format ${holder.current().storeFormat}): start the server once (coffer serve) to upgrade it, then run this again`,
      2,
    );
  }
  return new AuditRegistry(storage, holder.recordSeal).chains();
}

async function verifyCommand(config: CofferConfig, given: string[], out: Out): Promise<number> {
  const files = given.length > 0 ? given : auditFilesIn(config.audit.dir!);
  if (files.length === 0) throw new CliError(`no audit files in ${config.audit.dir}`, 1);
  return withKeyring(config, async (storage, holder) => {
    const registry = await chainRegistry(config, storage, holder);
    // Given files are checked as given; the whole log includes, on shared storage, other hosts' chains.
    const stored = given.length > 0 ? undefined : await storedChains(storage, holder.recordSeal);
    let result: VerifyResult;
    try {
      result = verifyAudit(files, holder.current().auditKey(), registry, stored);
    } catch (err) {
      throw new CliError((err as Error).message, 2);
    }
    if (result.intact) {
      out(
        `intact: ${result.entries} entries from ${result.first ?? '-'} to ${result.last ?? '-'} (${result.chains} chains, ${files.length} files)`,
      );
      const a = result.archived;
      if (a.files > 0)
        out(
          `archived: ${a.files} files with ${a.entries} entries up to ${a.last_ts ?? '-'}, of ${a.chains} chains, moved to ${a.to.join(', ')} (recorded in the log)`,
        );
      if (result.uncheckpointed > 0)
        out(`note: the last ${result.uncheckpointed} entries are not yet covered by a checkpoint`);
      // Which stored changes the log names, when it is the whole log.
      return given.length > 0
        ? 0
        : printCoverage(await auditCoverage(files, storage, holder.recordSeal, stored), out);
    }
    out(
      `BROKEN: ${result.file}${result.line > 0 ? `:${result.line}` : ''}${result.seq === null ? '' : ` (seq ${result.seq})`}: ${result.reason}`,
    );
    return 1;
  });
}

async function archiveCommand(
  config: CofferConfig,
  before: string,
  to: string,
  out: Out,
): Promise<number> {
  const dir = config.audit.dir!;
  const files = auditFilesIn(dir);
  if (files.length === 0) throw new CliError(`no audit files in ${dir}`, 1);
  return withKeyring(config, async (storage, holder) => {
    const result = verifyAudit(
      files,
      holder.current().auditKey(),
      await chainRegistry(config, storage, holder),
      await storedChains(storage, holder.recordSeal),
    );
    if (!result.intact) {
      out(`BROKEN: ${result.file}${result.line > 0 ? `:${result.line}` : ''}: ${result.reason}`);
      out('nothing archived: the log must verify before files leave it');
      return 1;
    }
    const plan = planArchive(files, before);
    if (plan.length === 0) {
      out(`nothing to archive: no finished audit file holds only entries before ${before}`);
      return 0;
    }
    ensureDirectory(to, '--to');
    try {
      copyArchive(plan, to);
    } catch (err) {
      throw new CliError(
        `could not copy to ${to} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); nothing archived`,
        1,
      );
    }
    // The record first, in a chain of its own that ends with a keyed checkpoint; then the originals go.
    const log = pino({ level: 'silent' });
    const audit = await openAuditLog(config, storage, holder, log, Date.now, 'audit.archive.start');
    // Intent copies left in the store are settled against the files while the files are still here; the
    // last minute's are left to their server, which may be writing their lines right now.
    await recoverIntents(storage, holder.recordSeal, dir, audit, { leaveYoungerThanMs: 60_000 });
    const recorded = await audit.event('audit.archive', {
      before,
      to,
      files: archivedFields(plan),
    });
    await audit.close();
    if (!recorded)
      throw new CliError(
        `the archive could not be recorded in ${dir}; the originals are kept (copies are in ${to})`,
        1,
      );
    removeArchived(plan, dir);
    const forgotten = await forgetArchived(storage, holder.recordSeal, plan);
    const entries = plan.reduce((n, f) => n + f.entries, 0);
    const times = plan
      .flatMap((f) => [f.first_ts, f.last_ts])
      .filter((t): t is string => t !== null)
      .sort();
    out(
      `archived ${plan.length} files (${entries} entries, ${times[0]} to ${times.at(-1)}) of ${new Set(plan.map((f) => f.chain)).size} chains to ${to}${forgotten > 0 ? `; the store's copy of them (${forgotten} records) removed` : ''}`,
    );
    return 0;
  });
}

function printCoverage(c: Coverage, out: Out): number {
  out(
    `covers: ${c.versions} stored versions: ${c.by_request} named by their write's entry, ${c.by_intent} by the intent entry of a write cut off before its own entry, ${c.before_log} created before the log begins`,
  );
  if (c.uncovered_count === 0) return 0;
  out(
    `NOT COVERED: ${c.uncovered_count} stored versions have no audit entry${c.uncovered_count > c.uncovered.length ? ` (the first ${c.uncovered.length} listed)` : ''}:`,
  );
  for (const v of c.uncovered) out(`  ${v.namespace}/${v.key} v${v.version}`);
  return 1;
}

/** Opens the existing store without its key (for what needs none: the structure-only seal report). */
async function withStore<T>(
  config: CofferConfig,
  work: (storage: StorageBackend) => Promise<T>,
): Promise<T> {
  if (!existsSync(config.data_dir))
    throw new CliError(`no Coffer store at ${config.data_dir} (COFFER_DATA_DIR)`, 2);
  const storage = await openStorage(config);
  try {
    if (!(await storage.get(KEYRING_KEY)))
      throw new CliError(
        `the store at ${config.data_dir} has no keyring: it is not a Coffer store that has been started`,
        2,
      );
    return await work(storage);
  } finally {
    await storage.close();
  }
}

async function sealReportCommand(
  config: CofferConfig,
  verify: boolean,
  json: boolean,
  io: AuditCommandIo,
): Promise<number> {
  // Without --verify nothing is decrypted, so no master key is needed: the keyring is used when the configured
  // key opens it (to check each record's keyring version is still there), and the report is made without it
  // when it does not (an auditor's machine without the key).
  const open = async <T>(
    work: (storage: StorageBackend, holder: KeyringHolder | null) => Promise<T>,
  ): Promise<T> => {
    if (verify) return withKeyring(config, work);
    try {
      return await withKeyring(config, work);
    } catch (err) {
      if (!(err instanceof KeyProviderError)) throw err;
      return withStore(config, (storage) => work(storage, null));
    }
  };
  const report = await open(async (storage, holder) => {
    const tty = io.progress?.isTTY === true;
    const bar = tty
      ? new cliProgress.SingleBar(
          {
            stream: io.progress!,
            format: 'seal report [{bar}] {value}/{total} versions | {eta_formatted} left',
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : null;
    bar?.start(0, 0);
    try {
      return await sealReport(storage, holder?.current() ?? null, {
        verify,
        now: Date.now(),
        ...(bar
          ? {
              onProgress: (done: number, total: number) => {
                bar.setTotal(total);
                bar.update(done);
              },
            }
          : {}),
      });
    } finally {
      bar?.stop();
    }
  });
  if (json) io.out(JSON.stringify(report, null, 2));
  else printReport(report, io.out);
  return report.totals.anomalies === 0 && report.totals.record_failures === 0 ? 0 : 1;
}

const cell = (text: string | number, width: number, left = false): string =>
  left ? String(text).padEnd(width) : String(text).padStart(width);

function printReport(r: SealReport, out: Out): void {
  const t = r.totals;
  out(
    `seal report, ${r.generated_at}${r.verified ? ' (every record opened in memory)' : ' (structure only; --verify also opens each record)'}`,
  );
  out(
    `${t.versions} versions: ${t.secrets} secret, ${t.configs} config; ${t.sealed_secrets} of ${t.secrets} secrets sealed; ${t.anomalies} anomalies`,
  );
  out('');
  out(
    `${cell('keyring version', 18, true)}${cell('created', 26, true)}${cell('secrets', 10)}${cell('configs', 10)}`,
  );
  for (const v of r.keyring.versions) {
    out(
      `${cell(`${v.version}${v.active ? ' (active)' : ''}`, 18, true)}${cell(v.created_at ?? '(needs the key)', 26, true)}${cell(v.secrets, 10)}${cell(v.configs, 10)}`,
    );
  }
  if (r.keyring.active_version === null)
    out(
      '(made without the master key: whether each keyring version is still in the keyring is not checked)',
    );
  out('');
  const width = Math.min(60, Math.max(9, ...r.namespaces.map((n) => n.namespace.length))) + 2;
  out(`${cell('namespace', width, true)}${cell('secrets', 10)}${cell('configs', 10)}`);
  for (const n of r.namespaces)
    out(`${cell(n.namespace, width, true)}${cell(n.secrets, 10)}${cell(n.configs, 10)}`);
  out('');
  out(
    `${cell('store record', 18, true)}${cell('records', 10)}${cell(r.verified ? 'failed' : 'not sealed', 12)}`,
  );
  for (const k of r.records)
    out(`${cell(k.kind, 18, true)}${cell(k.records, 10)}${cell(k.failed, 12)}`);
  if (t.record_failures > 0)
    out(
      `RECORD FAILURES (${t.record_failures}): records of the store that failed their check are never used; the server logs each by kind and key`,
    );
  out('');
  if (t.anomalies === 0) {
    out('no anomalies: every secret version is sealed');
    return;
  }
  out(
    `ANOMALIES (${t.anomalies}${t.anomalies > r.anomalies.length ? `, the first ${r.anomalies.length} listed` : ''}):`,
  );
  for (const a of r.anomalies) out(`  ${a.namespace}/${a.key} v${a.version}: ${a.problem}`);
}
