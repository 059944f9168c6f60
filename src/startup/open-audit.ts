/**
 * Opening this process's audit chain (audit/), and the start-up work on the log that must come before
 * anything is served: files cut short by a killed process repaired, and intents a crash took from the
 * files put back into the log from their copies in the store.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { AuditLog } from '../audit/audit-log.js';
import { closeStoppedChains } from '../audit/chain-closing.js';
import { type ChainKeys, chainKeysOf } from '../audit/chain-keys.js';
import { MirroredSink } from '../audit/database-copy.js';
import { FileSink } from '../audit/file-sink.js';
import { IntentJournal } from '../audit/intent-journal.js';
import { recoverIntents } from '../audit/intent-recovery.js';
import { StdoutSink } from '../audit/stdout-sink.js';
import { AuditStream } from '../audit/streams/audit-stream.js';
import { CatchUp, catchUpStreams } from '../audit/streams/catch-up.js';
import { ChainProgress } from '../audit/streams/stream-progress.js';
import { parseStreams } from '../audit/streams/stream-spec.js';
import { transportFor } from '../audit/streams/transports.js';
import { repairTornTails } from '../audit/tail-repair.js';
import { AuditWriter } from '../audit/writer.js';
import type { CofferConfig } from '../config/schema.js';
import { randomBase62 } from '../crypto/random.js';
import type { AuditRecords } from '../store/audit-records.js';
import type { KeyringHolder } from '../store/keyring-store.js';

/**
 * How old an intent copy must be before a starting server puts it back into the log on shared storage: its
 * own server deletes it within about a second of syncing the line, so an older one was left by a server
 * that stopped (or cannot write its log).
 */
const SHARED_INTENT_GRACE_MS = 60_000;

export interface AuditOpening {
  readonly config: Pick<CofferConfig, 'audit'>;
  readonly records: AuditRecords;
  readonly keyring: KeyringHolder;
  /** Several servers share the store: the chain is kept in the store too, for every host to read. */
  readonly shared: boolean;
  readonly log: Logger;
  readonly now: () => number;
  /** Start even when the store counts fewer audit chains than this host has seen (coffer serve --accept-rollback). */
  readonly acceptRollback?: boolean;
}

/** This process's audit chain, recorded in the store, with its first entry (`firstEvent`) durable. */
export async function openAuditLog(opening: AuditOpening, firstEvent: string): Promise<AuditLog> {
  const { config, records, keyring, log, now } = opening;
  const chain = `${now().toString(36)}-${process.pid}-${randomBase62(8)}`;
  let keys: ChainKeys | undefined;
  const { count: ordinal, rolledBack } = await records.started(
    chain,
    now(),
    { host: hostname(), pid: process.pid, checkpoint_ms: config.audit.checkpoint_seconds * 1000 },
    opening.acceptRollback === true,
  );
  const journal = new IntentJournal(records, chain);
  const files = new FileSink({
    dir: config.audit.dir!,
    chain,
    maxFileBytes: config.audit.max_file_bytes,
  });
  const specs = parseStreams(config.audit.streams);
  const streams = specs.map((spec) => {
    const progress = new ChainProgress(config.audit.dir!, spec.name, chain);
    progress.begin();
    return new AuditStream(spec, transportFor(spec), log, progress);
  });
  const writer = new AuditWriter({
    sink: opening.shared ? new MirroredSink(files, records, chain) : files,
    streams,
    sealBatches: streams.length > 0,
    ...(config.audit.stdout ? { copies: [new StdoutSink()] } : {}),
    chain,
    // The chain keys come from the keyring's permanent root: made once, never changed.
    keys: () => (keys ??= chainKeysOf(keyring.current())),
    registry: records,
    checkpointEvery: config.audit.checkpoint_every,
    checkpointMs: config.audit.checkpoint_seconds * 1000,
    now,
    syncMs: config.audit.sync_ms,
    onSynced: (seq) => journal.synced(seq),
    highWater: () => ({ generation: keyring.generation, chains: ordinal }),
  });
  const audit = new AuditLog({
    writer,
    failOpen: config.audit.fail_open,
    log,
    syncEveryEntry: config.audit.sync_every_entry,
    journal,
    catchUp: new CatchUp({ auditDir: config.audit.dir!, specs, transport: transportFor, log }),
  });
  if (
    !(await audit.event(firstEvent, { pid: process.pid, provider: keyring.wrapping().description }))
  ) {
    throw new Error(
      `the audit log cannot be written in ${config.audit.dir}; Coffer does not serve unrecorded requests (audit.fail_open is false)`,
    );
  }
  if (rolledBack) {
    const fields = { store_count: rolledBack.stored, host_seen: rolledBack.seen, by: 'start-up' };
    await audit.event('audit.rollback_accepted', fields);
    log.warn(
      { event: 'audit.rollback_accepted', ...fields },
      'serving from a store put back from an older copy (--accept-rollback): the audit chains it lost stay a gap that verify reports',
    );
  }
  return audit;
}

/**
 * Closes the chains of this host's servers that stopped without closing them (audit/chain-closing.ts);
 * and for the process that prepares the store — before any other writes to the audit directory — repairs
 * files a killed process left cut short, and puts intents missing from the audit files (a power loss, or a
 * kill as a change committed) back into the log (audit/intent-recovery.ts).
 */
export async function recoverAuditLog(
  opening: AuditOpening,
  audit: AuditLog,
  preparing: boolean,
): Promise<void> {
  if (preparing) await recoverIntentsAndTails(opening, audit);
  // Lines that waited for a stream when their process stopped (the files are whole again by now).
  if (preparing)
    await catchUpStreams({
      auditDir: opening.config.audit.dir!,
      specs: parseStreams(opening.config.audit.streams),
      transport: transportFor,
      log: opening.log,
    });
  // Then, while serving, what still waits (a stream down now, back later) is sent as it comes back.
  audit.catchUpWhileServing();
  await closeStoppedChains({
    auditDir: opening.config.audit.dir!,
    records: opening.records,
    keys: chainKeysOf(opening.keyring.current()),
    own: audit.chain,
    audit,
    shared: opening.shared,
    log: opening.log,
  });
}

async function recoverIntentsAndTails(opening: AuditOpening, audit: AuditLog): Promise<void> {
  const { config, log } = opening;
  for (const torn of repairTornTails(config.audit.dir!)) {
    await audit.event('audit.tail_repaired', { ...torn });
    log.warn(
      { event: 'audit.tail_repaired', ...torn },
      'an audit file ended in part of a line (a process killed while writing it): cut back to its last whole line',
    );
  }
  // On shared storage other servers are writing intents now: their newest copies are theirs to clean up.
  const { found, recovered } = await recoverIntents(opening.records, config.audit.dir!, audit, {
    ...(opening.shared ? { leaveYoungerThanMs: SHARED_INTENT_GRACE_MS } : {}),
  });
  if (recovered > 0) {
    log.warn(
      { event: 'audit.intent_recovered', recovered },
      '%d intent entries missing from the audit files (a power loss, a machine crash, or a process killed as it committed) were put back into the log from the store',
      recovered,
    );
  } else if (found > 0)
    log.info({ found }, 'intent copies left by a stopped process were all in the audit files');
}
