/**
 * What an auditor asks of the server about the store and the log, for one who holds no master key: is the
 * audit log intact and does it name every stored change (verify, with coverage), and is every stored
 * record sealed (the seal report). The HTTP routes only check the caller and answer; this reads the store.
 */
import { chainKeysOf, publicKeyFingerprint, publicKeyText } from '../audit/chain-keys.js';
import { auditCoverage, type Coverage } from '../audit/coverage.js';
import { storedChains } from '../audit/database-copy.js';
import {
  type AuditFilter,
  type AuditPage,
  type AuditPosition,
  queryAudit,
} from '../audit/query.js';
import type { VerifyResult } from '../audit/verify.js';
import { verifyLog } from '../audit/verify-log.js';
import type { SealReport } from '../store/seal-report.js';
import type { Records, Store } from '../store/store.js';

export interface AuditReviewDeps {
  readonly store: Pick<Store, 'sealReport'>;
  readonly records: Pick<Records, 'keyring' | 'kv' | 'audit' | 'tokens'>;
  readonly auditDir: string;
  readonly now: () => number;
}

/** A verification, with (when the chains are intact) how many files it read and what the log names. */
export type Verification =
  | Extract<VerifyResult, { intact: false }>
  | (Extract<VerifyResult, { intact: true }> & {
      readonly files: number;
      readonly coverage: Coverage;
    });

export class AuditReview {
  constructor(private readonly deps: AuditReviewDeps) {}

  /** The offline `coffer audit verify`, run by the server against its own store and files. */
  async verify(): Promise<Verification> {
    const { keyring, audit } = this.deps.records;
    await keyring.refresh();
    const { result, files, stored } = await verifyLog({
      auditDir: this.deps.auditDir,
      records: audit,
      keyring: keyring.current(),
      now: this.deps.now(),
    });
    if (!result.intact) return result;
    return {
      ...result,
      files: files.length,
      coverage: await auditCoverage(files, this.deps.records, stored),
    };
  }

  /** The public key that checks the audit checkpoints' signatures. */
  publicKey(): { algorithm: 'Ed25519'; public_key: string; fingerprint: string } {
    const keys = chainKeysOf(this.deps.records.keyring.current());
    return {
      algorithm: 'Ed25519',
      public_key: publicKeyText(keys),
      fingerprint: publicKeyFingerprint(keys),
    };
  }

  /** A page of the audit log: this server's files, and on shared storage every other server's chains. */
  async search(
    filter: AuditFilter,
    limit: number,
    after: AuditPosition | null,
    newestFirst = false,
  ): Promise<AuditPage> {
    const stored = await storedChains(this.deps.records.audit);
    return queryAudit(this.deps.auditDir, filter, limit, after, stored, newestFirst);
  }

  /** Every stored version counted and form-checked; with `verify`, also opened in memory. */
  async sealReport(verify: boolean): Promise<SealReport> {
    await this.deps.records.keyring.refresh();
    return this.deps.store.sealReport(this.deps.records.keyring.current(), {
      verify,
      now: this.deps.now(),
    });
  }
}
