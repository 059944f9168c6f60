/** Printing bench tables, and where results go. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadResult } from './wrk.js';

export const resultsDir = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'bench', 'results');

export interface Row {
  readonly case: string;
  readonly server: string;
  readonly result: LoadResult;
}

export function printTable(header: string, rows: readonly Row[]): void {
  console.log(`\n${header}\n`);
  console.log(`${'case'.padEnd(30)} ${'server'.padEnd(12)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'errors'.padStart(7)} ${'≥400'.padStart(7)}`);
  for (const { case: name, server, result: r } of rows) {
    console.log(`${name.padEnd(30)} ${server.padEnd(12)} ${r.requestsPerSecond.toFixed(0).padStart(9)} ${r.p50Ms.toFixed(2).padStart(8)} ${r.p99Ms.toFixed(2).padStart(8)} ${String(r.errors).padStart(7)} ${String(r.failedStatus).padStart(7)}`);
  }
}
