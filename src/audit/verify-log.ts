/**
 * The whole log verified as the server and `coffer audit verify` both do it: the files in the audit
 * directory (or those given), the chains the store keeps for other hosts, the store's record and count of
 * the chains, and this host's memory of that count — with every key of the chains, from the keyring.
 */

import { hostname } from 'node:os';
import type { Keyring } from '../crypto/keyring.js';
import { processRuns } from '../processes.js';
import type { AuditRecords } from '../store/audit-records.js';
import { chainKeysOf } from './chain-keys.js';
import { type StoredChains, storedChains } from './database-copy.js';
import { auditFilesIn } from './files.js';
import { type VerifyResult, verifyAudit } from './verify.js';

export interface VerifiedLog {
  readonly result: VerifyResult;
  /** The files read (the directory's, or those given). */
  readonly files: readonly string[];
  /** The chains the store keeps (when the whole log was verified). */
  readonly stored: StoredChains | undefined;
}

export async function verifyLog(input: {
  readonly auditDir: string;
  /** Only these files (as given), instead of the whole log. */
  readonly files?: readonly string[];
  readonly records: AuditRecords;
  readonly keyring: Keyring;
  readonly now: number;
}): Promise<VerifiedLog> {
  const { records } = input;
  const whole = input.files === undefined;
  const files = input.files ?? auditFilesIn(input.auditDir);
  // Given files are checked as given; the whole log includes, on shared storage, other hosts' chains.
  const stored = whole ? await storedChains(records) : undefined;
  const result = verifyAudit(files, {
    keys: chainKeysOf(input.keyring),
    registry: await records.chains(),
    ...(whole
      ? { counted: { count: await records.chainCount(), seen: records.chainCountSeen() } }
      : {}),
    ...(stored ? { stored } : {}),
    now: input.now,
    alive: (writer) => (writer.host === hostname() ? processRuns(writer.pid) : null),
  });
  return { result, files, stored };
}
