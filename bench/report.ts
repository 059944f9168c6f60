/** Printing bench tables, and where results go. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadResult } from './wrk.js';

export const resultsDir = join(
  fileURLToPath(new URL('.', import.meta.url)),
  '..',
  '..',
  'bench',
  'results',
);

export interface Row {
  readonly case: string;
  readonly server: string;
  readonly result: LoadResult;
}

export function printTable(header: string, rows: readonly Row[]): void {
  console.log(`\n${header}\n`);
  console.log(
    `${'case'.padEnd(30)} ${'server'.padEnd(12)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'errors'.padStart(7)} ${'≥400'.padStart(7)}`,
  );
  for (const { case: name, server, result: r } of rows) {
    console.log(
      `${name.padEnd(30)} ${server.padEnd(12)} ${r.requestsPerSecond.toFixed(0).padStart(9)} ${r.p50Ms.toFixed(2).padStart(8)} ${r.p99Ms.toFixed(2).padStart(8)} ${String(r.errors).padStart(7)} ${String(r.failedStatus).padStart(7)}`,
    );
  }
}

/** The median of `xs` (NaN when empty): what rounds of one measurement are summed up by. */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A number the issues set a bound on, and whether this run met it. */
export interface Target {
  readonly name: string;
  readonly value: number;
  readonly wanted: string;
  readonly met: boolean;
}

export function target(name: string, value: number, op: '≥' | '≤', bound: number): Target {
  return {
    name,
    value,
    wanted: `${op} ${bound}`,
    met: op === '≥' ? value >= bound : value <= bound,
  };
}

export function printTargets(targets: readonly Target[]): void {
  console.log('\ntargets');
  for (const t of targets)
    console.log(
      `  ${t.name.padEnd(52)} ${t.value.toFixed(2).padStart(7)}   (${t.wanted})${t.met ? '' : '  MISSED'}`,
    );
}

/** A markdown table: `header` names the columns, the first left-aligned, the rest right-aligned. */
export function markdownTable(
  header: readonly string[],
  lines: readonly (readonly (string | number)[])[],
): string {
  const row = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
  return [
    row(header),
    row(header.map((_, i) => (i === 0 ? '---' : '---:'))),
    ...lines.map(row),
  ].join('\n');
}

export function markdownRows(rows: readonly Row[]): string {
  return markdownTable(
    ['case', 'server', 'req/s', 'p50 ms', 'p99 ms', 'errors', '≥ 400'],
    rows.map(({ case: name, server, result: r }) => [
      name.trim(),
      server,
      r.requestsPerSecond.toFixed(0),
      r.p50Ms.toFixed(2),
      r.p99Ms.toFixed(2),
      r.errors,
      r.failedStatus,
    ]),
  );
}

export function markdownTargets(targets: readonly Target[]): string {
  return markdownTable(
    ['target', 'measured', 'wanted', ''],
    targets.map((t) => [t.name, t.value.toFixed(2), t.wanted, t.met ? 'met' : '**missed**']),
  );
}
