/**
 * `coffer audit verify [files…]` and `coffer audit archive --before DATE --to DIR`, offline.
 *
 * verify: checks the audit chains (default: every file in the audit directory) against their checkpoints
 * and the store's record of them; prints "intact: N entries from T1 to T2" or the first broken entry and
 * why (exit 1). Over the whole directory it then says which stored versions the log names (audit/coverage.ts),
 * and exits 1 when any is named by no entry.
 */
import { existsSync } from 'node:fs';
import { pino } from 'pino';
import { type AgainstResult, compareAgainst } from '../audit/against.js';
import { archivedFields, copyArchive, planArchive, removeArchived } from '../audit/archive.js';
import {
  chainKeysOf,
  parsePublicKey,
  publicChainKeys,
  publicKeyText,
} from '../audit/chain-keys.js';
import { auditCoverage, type Coverage } from '../audit/coverage.js';
import { forgetArchived } from '../audit/database-copy.js';
import { auditFilesIn, type ChainFile, chainFiles } from '../audit/files.js';
import { recoverIntents } from '../audit/intent-recovery.js';
import { type VerifyResult, verifyAudit } from '../audit/verify.js';
import { type VerifiedLog, verifyLog } from '../audit/verify-log.js';
import type { CofferConfig } from '../config/schema.js';
import { sodiumReady } from '../crypto/aead.js';
import { STORE_FORMAT } from '../crypto/keyring.js';
import { ensureDirectory } from '../directories.js';
import { openAuditLog } from '../startup/open-audit.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { Out } from './command-io.js';
import { CliError, EXIT } from './exit-codes.js';
import { withKeyring } from './offline-store.js';

/** A store not yet upgraded (format 1) holds the audit chain registry unsealed: start a server once first. */
async function requireUpgraded(config: CofferConfig, holder: KeyringHolder): Promise<void> {
  if (holder.current().storeFormat < STORE_FORMAT) {
    throw new CliError(
      `the store at ${config.data_dir} was written by an earlier release (store format ${holder.current().storeFormat}): start the server once (coffer serve) to upgrade it, then run this again`,
      EXIT.usage,
    );
  }
}

/** The audit directory's files; a missing store or directory is said in one line. */
function auditFilesOf(config: CofferConfig): string[] {
  if (!existsSync(config.data_dir))
    throw new CliError(`no Coffer store at ${config.data_dir} (COFFER_DATA_DIR)`, EXIT.usage);
  if (!existsSync(config.audit.dir!))
    throw new CliError(`no audit directory at ${config.audit.dir} (COFFER_AUDIT_DIR)`, EXIT.usage);
  return auditFilesIn(config.audit.dir!);
}

export async function verifyCommand(
  config: CofferConfig,
  given: string[],
  publicKey: string | undefined,
  out: Out,
  against: readonly string[] = [],
): Promise<number> {
  for (const path of against)
    if (!existsSync(path)) throw new CliError(`--against ${path}: no such file`, EXIT.usage);
  if (publicKey !== undefined) return verifyWithPublicKey(config, given, publicKey, out, against);
  const files = given.length > 0 ? given : auditFilesOf(config);
  if (files.length === 0) throw new CliError(`no audit files in ${config.audit.dir}`, EXIT.failure);
  return withKeyring(config, async (_store, records, holder) => {
    await requireUpgraded(config, holder);
    let verified: VerifiedLog;
    try {
      verified = await verifyLog({
        auditDir: config.audit.dir!,
        ...(given.length > 0 ? { files: given } : {}),
        records: records.audit,
        keyring: holder.current(),
        now: Date.now(),
      });
    } catch (err) {
      throw new CliError((err as Error).message, EXIT.usage);
    }
    const { result, stored } = verified;
    const keys = chainKeysOf(holder.current());
    const held = holdAgainst(files, stored?.files ?? [], against, keys);
    if (result.intact) printNotIntact(held, out);
    const intact = printVerdict(result, files.length, out);
    out(
      `checkpoints signed by Ed25519 public key ${publicKeyText(keys)} (GET /v1/sys/audit/public-key; coffer audit verify --public-key checks the files with it alone)`,
    );
    // Which stored changes the log names, when it is the whole log (said even when it is not intact: what
    // it still names is worth knowing).
    const covered =
      given.length > 0 ? EXIT.ok : printCoverage(await auditCoverage(files, records, stored), out);
    const shippedHeld = printAgainst(held, against.length, out);
    if (against.length === 0 && intact) printLocalScope(out);
    return intact && shippedHeld ? covered : EXIT.failure;
  });
}

/**
 * An auditor's check with only the published public key (no master key, no store): each chain's lines
 * up to its newest checkpoint, by the checkpoints' signatures.
 */
async function verifyWithPublicKey(
  config: CofferConfig,
  given: string[],
  text: string,
  out: Out,
  against: readonly string[],
): Promise<number> {
  const publicKey = parsePublicKey(text);
  if (publicKey === null)
    throw new CliError(
      '--public-key must be the 64 hex digits GET /v1/sys/audit/public-key gives',
      EXIT.usage,
    );
  const files = given.length > 0 ? given : auditFilesOf(config);
  if (files.length === 0) throw new CliError(`no audit files in ${config.audit.dir}`, EXIT.failure);
  await sodiumReady();
  let result: VerifyResult;
  try {
    result = verifyAudit(files, {
      keys: publicChainKeys(publicKey),
      registry: null,
      now: Date.now(),
    });
  } catch (err) {
    throw new CliError((err as Error).message, EXIT.usage);
  }
  const held = holdAgainst(files, [], against, { publicKey });
  if (result.intact) printNotIntact(held, out);
  out(
    "checked with the public key alone: every entry up to each chain's newest signed checkpoint; the store's record of the chains (which exist, where each ended) needs the master key",
  );
  const intact = printVerdict(result, files.length, out);
  return printAgainst(held, against.length, out) && intact ? EXIT.ok : EXIT.failure;
}

/**
 * With --against: the local log (`files`, and the store's copy of other hosts' chains) held against what
 * an audit stream shipped (audit/against.ts); undefined without --against.
 */
function holdAgainst(
  files: readonly string[],
  stored: readonly ChainFile[],
  against: readonly string[],
  keys: { readonly publicKey: Uint8Array; readonly link?: Uint8Array | undefined },
): AgainstResult | undefined {
  if (against.length === 0) return undefined;
  return compareAgainst(chainFiles(files, stored), against, keys);
}

const PROBLEM_HEADS = {
  local: 'NOT AS SHIPPED',
  shipped: 'SHIPPED COPY NOT AS SIGNED',
  unsigned: 'UNSIGNED IN SHIPPED COPY',
} as const;

/** Prints what --against found; true when every shipped line the server wrote is in the local log as shipped. */
function printAgainst(result: AgainstResult | undefined, files: number, out: Out): boolean {
  if (result === undefined) return true;
  if (result.shipped === 0) {
    out(
      `NOTHING SHIPPED: the ${files} shipped file(s) hold no audit entry${result.skipped > 0 ? ` (${result.skipped} other lines)` : ''}: there is nothing to hold the log against (is it the stream's file?)`,
    );
    return false;
  }
  for (const problem of result.problems)
    out(
      `${PROBLEM_HEADS[problem.in]}: chain ${problem.chain} seq ${problem.seq}: ${problem.reason}`,
    );
  if (!result.problems.some((p) => p.in !== 'shipped'))
    out(
      `as shipped: all ${result.shipped - result.archived} entries of ${result.chains} chains in ${files} shipped file(s) are in the local log, unchanged${result.archived > 0 ? ` (and ${result.archived} older ones of archived files, which verify accounts for by their records)` : ''}${result.unshipped > 0 ? ` (${result.unshipped} newer local entries not in the shipped copy yet)` : ''}; ${result.signed} of them under a shipped checkpoint whose signature verified`,
    );
  if (result.skipped > 0)
    out(
      `note: ${result.skipped} lines of the shipped file(s) hold no audit entry and were passed over`,
    );
  return result.intact;
}

/** The first line when --against finds what the local checks did not: the verdict below is not the whole one. */
function printNotIntact(result: AgainstResult | undefined, out: Out): void {
  if (result !== undefined && !result.intact)
    out('NOT INTACT: held against the shipped copy (below), though the local checks alone pass');
}

/**
 * What an intact verdict from this machine's files and store does not rule out: every anchor it checks
 * lives on disks this machine's administrators can write, so an older copy of the data directory put back
 * whole verifies too. Only a copy kept elsewhere (an audit stream's) catches that.
 */
export function printLocalScope(out: Out): void {
  out(
    'note: checked against this machine\'s own files and store: a data directory put back whole from an older copy verifies too; --against FILE holds the log against what an audit stream shipped, which catches that (docs/audit.md, "Audit streams")',
  );
}

/** Prints the verdict (the same from the files and from GET /v1/sys/audit/verify); true when intact. */
export function printVerdict(
  result:
    | Pick<
        Extract<VerifyResult, { intact: true }>,
        'intact' | 'entries' | 'first' | 'last' | 'chains' | 'archived' | 'uncheckpointed'
      >
    | Pick<Extract<VerifyResult, { intact: false }>, 'intact' | 'file' | 'line' | 'seq' | 'reason'>,
  files: number,
  out: Out,
): boolean {
  if (!result.intact) {
    out(
      `BROKEN: ${result.file}${result.line > 0 ? `:${result.line}` : ''}${result.seq === null ? '' : ` (seq ${result.seq})`}: ${result.reason}`,
    );
    return false;
  }
  out(
    `intact: ${result.entries} entries from ${result.first ?? '-'} to ${result.last ?? '-'} (${result.chains} chains, ${files} files)`,
  );
  const a = result.archived;
  if (a.files > 0)
    out(
      `archived: ${a.files} files with ${a.entries} entries up to ${a.last_ts ?? '-'}, of ${a.chains} chains, moved to ${a.to.join(', ')} (recorded in the log)`,
    );
  if (result.uncheckpointed > 0)
    out(
      `note: the newest ${result.uncheckpointed} entries, of running servers, are not yet covered by a checkpoint (each server makes one within its checkpoint interval)`,
    );
  return true;
}

export async function archiveCommand(
  config: CofferConfig,
  before: string,
  to: string,
  out: Out,
): Promise<number> {
  const dir = config.audit.dir!;
  const files = auditFilesOf(config);
  if (files.length === 0) throw new CliError(`no audit files in ${dir}`, EXIT.failure);
  return withKeyring(config, async (store, records, holder) => {
    await requireUpgraded(config, holder);
    const { result } = await verifyLog({
      auditDir: dir,
      records: records.audit,
      keyring: holder.current(),
      now: Date.now(),
    });
    if (!result.intact) {
      out(`BROKEN: ${result.file}${result.line > 0 ? `:${result.line}` : ''}: ${result.reason}`);
      out('nothing archived: the log must verify before files leave it');
      return EXIT.failure;
    }
    const formats = new Map((await records.audit.chains()).map((r) => [r.chain, r.format ?? 1]));
    const plan = planArchive(files, before, chainKeysOf(holder.current()), (chain) =>
      formats.get(chain) === 2 ? 2 : 1,
    );
    if (plan.length === 0) {
      out(`nothing to archive: no finished audit file holds only entries before ${before}`);
      return EXIT.ok;
    }
    ensureDirectory(to, '--to');
    try {
      copyArchive(plan, to);
    } catch (err) {
      throw new CliError(
        `could not copy to ${to} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); nothing archived`,
        EXIT.failure,
      );
    }
    // The record first, in a chain of its own that ends with a keyed checkpoint; then the originals go.
    const log = pino({ level: 'silent' });
    const opening = {
      config,
      records: records.audit,
      keyring: holder,
      shared: store.shared,
      log,
      now: Date.now,
    };
    const audit = await openAuditLog(opening, 'audit.archive.start');
    // Intent copies left in the store are settled against the files while the files are still here; the
    // last minute's are left to their server, which may be writing their lines right now.
    await recoverIntents(records.audit, dir, audit, { leaveYoungerThanMs: 60_000 });
    const recorded = await audit.event('audit.archive', {
      before,
      to,
      files: archivedFields(plan),
    });
    await audit.close();
    if (!recorded)
      throw new CliError(
        `the archive could not be recorded in ${dir}; the originals are kept (copies are in ${to})`,
        EXIT.failure,
      );
    removeArchived(plan, dir);
    const forgotten = await forgetArchived(records.audit, plan);
    const entries = plan.reduce((n, f) => n + f.entries, 0);
    const times = plan
      .flatMap((f) => [f.first_ts, f.last_ts])
      .filter((t): t is string => t !== null)
      .sort();
    out(
      `archived ${plan.length} files (${entries} entries, ${times[0]} to ${times.at(-1)}) of ${new Set(plan.map((f) => f.chain)).size} chains to ${to}${forgotten > 0 ? `; the store's copy of them (${forgotten} records) removed` : ''}`,
    );
    return EXIT.ok;
  });
}

/** Prints what the log names of the store's changes; 1 when something is not covered. */
export function printCoverage(c: Coverage, out: Out): number {
  out(
    `covers: ${c.versions} stored versions: ${c.by_request} named by their write's entry, ${c.by_intent} by the intent entry of a write cut off before its own entry, ${c.before_log} created before the log begins`,
  );
  const {
    tokens_created: created,
    tokens_revoked: revoked,
    keyring_rotations: rotations,
  } = c.changes;
  out(
    `covers: ${created.count} tokens created, ${revoked.count} revoked, ${rotations.count} keyring rotations: ${created.covered + revoked.covered + rotations.covered} named by their events, ${created.before_log + revoked.before_log + rotations.before_log} made before the log begins`,
  );
  let status: number = EXIT.ok;
  if (c.uncovered_count > 0) {
    out(
      `NOT COVERED: ${c.uncovered_count} stored versions have no audit entry${c.uncovered_count > c.uncovered.length ? ` (the first ${c.uncovered.length} listed)` : ''}:`,
    );
    for (const v of c.uncovered) out(`  ${v.namespace}/${v.key} v${v.version}`);
    status = EXIT.failure;
  }
  const unnamed: [string, readonly (string | number)[]][] = [
    ['token created, with no token.create entry', created.uncovered],
    ['token revoked, with no token.revoke entry', revoked.uncovered],
    ['keyring version made, with no keyring.rotate entry', rotations.uncovered],
  ];
  for (const [what, ids] of unnamed) {
    if (ids.length === 0) continue;
    out(`NOT COVERED: ${ids.length} ${what}:`);
    for (const id of ids) out(`  ${id}`);
    status = EXIT.failure;
  }
  // Older records put back (with the host's high-water marks gone): the store contradicts the log.
  const { revoked_but_active: active, writes_missing: missing } = c.contradicted;
  if (active.length > 0) {
    out(
      `NOT AS LOGGED: ${active.length} token(s) the log revoked (token.revoke) are active in the store: older records were put back:`,
    );
    for (const id of active) out(`  ${id}`);
    status = EXIT.failure;
  }
  if (missing.length > 0) {
    out(
      `NOT AS LOGGED: ${missing.length} version(s) the log says were written are not in the store, and no delete of their key followed: versions removed, or an older store put back:`,
    );
    for (const v of missing)
      out(`  ${v.namespace}/${v.key} v${v.version} (request ${v.request_id})`);
    status = EXIT.failure;
  }
  const { generation, chains } = c.contradicted.behind;
  if (generation) {
    out(
      `NOT AS LOGGED: the store's keyring is at generation ${generation.store}, below the ${generation.logged} the log's checkpoints recorded: an older keyring was put back`,
    );
    status = EXIT.failure;
  }
  if (chains) {
    out(
      `NOT AS LOGGED: the store counts ${chains.store} audit chains, fewer than the ${chains.logged} the log's checkpoints recorded: the store's chain records were put back`,
    );
    status = EXIT.failure;
  }
  return status;
}
