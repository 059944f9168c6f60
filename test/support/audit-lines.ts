/** Reading the audit files the way an auditor's tools would: every line of every file, parsed. */
import { readFileSync } from 'node:fs';
import { auditFilesIn } from '../../src/audit/files.js';

export type AuditLine = Record<string, unknown> & {
  seq: number;
  chain: string;
  ts: string;
  kind: string;
};

/** The audit files in `dir`, in name order. */
export function auditFiles(dir: string): string[] {
  return auditFilesIn(dir).sort();
}

/** Every line of every audit file in `dir`. */
export function auditLines(dir: string): AuditLine[] {
  return auditFiles(dir).flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditLine),
  );
}
