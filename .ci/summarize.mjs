// Prints the failures and pending tests from mocha's JSON results, then the closing line "N passed, M failed".
import { readFileSync } from 'node:fs';

let results;
try {
  results = JSON.parse(readFileSync(process.argv[2], 'utf8'));
} catch (err) {
  console.error(`no mocha results to read (${err.message})`);
  process.exit(1);
}
for (const failure of results.failures ?? []) {
  console.log(`FAILED: ${failure.fullTitle}\n  ${String(failure.err?.message ?? '').split('\n').join('\n  ')}`);
}
for (const test of results.pending ?? []) console.log(`PENDING: ${test.fullTitle}`);
const { passes, failures, pending } = results.stats;
console.log(`${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}`);
