/**
 * What an auditor asks of the server about the store and the log, for one who holds no master key: is the
 * audit log intact and does it name every stored change (verify, with coverage), and is every stored
 * record sealed (the seal report). The HTTP routes only check the caller and answer; this reads the store.
 */
import { auditCoverage, type Coverage } from '../audit/coverage.js';
import { storedChains } from '../audit/database-copy.js';
import { auditFilesIn } from '../audit/files.js';
import {
  type AuditFilter,
  type AuditPage,
  type AuditPosition,
  queryAudit,
} from '../audit/query.js';
import { AuditRegistry } from '../audit/registry.js';
import { type VerifyResult, verifyAudit } from '../audit/verify.js';
import type { StorageBackend } from '../storage/backend.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import { type SealReport, sealReport } from './seal-report.js';

export interface AuditReviewDeps {
  readonly storage: StorageBackend;
  readonly keyring: KeyringHolder;
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
    const { keyring, storage } = this.deps;
    await keyring.refresh();
    const files = auditFilesIn(this.deps.auditDir);
    const registry = await new AuditRegistry(storage, keyring.recordSeal).chains();
    const stored = await storedChains(storage, keyring.recordSeal);
    const result = verifyAudit(files, keyring.current().auditKey(), registry, stored);
    if (!result.intact) return result;
    return {
      ...result,
      files: files.length,
      coverage: await auditCoverage(files, storage, keyring.recordSeal, stored),
    };
  }

  /** A page of the audit log: this server's files, and on shared storage every other server's chains. */
  async search(
    filter: AuditFilter,
    limit: number,
    after: AuditPosition | null,
  ): Promise<AuditPage> {
    const stored = await storedChains(this.deps.storage, this.deps.keyring.recordSeal);
    return queryAudit(this.deps.auditDir, filter, limit, after, stored);
  }

  /** Every stored version counted and form-checked; with `verify`, also opened in memory. */
  async sealReport(verify: boolean): Promise<SealReport> {
    await this.deps.keyring.refresh();
    return sealReport(this.deps.storage, this.deps.keyring.current(), {
      verify,
      now: this.deps.now(),
    });
  }
}
