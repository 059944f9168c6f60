/**
 * `npm run bench:all`: every case of `npm run bench` (bench/run.ts), then the etcd comparison
 * (bench/etcd.ts), in one sitting; writes one JSON and one markdown report of both to bench/results/,
 * headed by the machine (CPU model, cores, memory, kernel, node) and the date, so that two machines' runs
 * can be told apart and never mixed in one ratio. docs/performance.md shows the latest such report.
 *
 *   npm run bench:all -- [--seconds 10] [--connections 32] [--rounds N]   (rounds: 5 for the audit cost, 3 for etcd)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { etcdHeader, etcdMarkdown, runEtcdComparison } from './etcd.js';
import { machine } from './machine.js';
import { markdownRows, markdownTargets, printTable, printTargets, resultsDir } from './report.js';
import { benchHeader, runBench } from './run.js';

async function main(): Promise<void> {
  const started = new Date();
  const bench = await runBench(undefined);
  const etcd = await runEtcdComparison();
  const finished = new Date();
  const m = machine();
  const targets = [...etcd.targets, ...bench.targets];

  const describe = `${m.cores} × ${m.cpu}, ${m.memory_gib} GiB, ${m.kernel}, node ${m.node}`;
  printTable(
    `Coffer benchmark — ${finished.toISOString()} — ${describe}\n${benchHeader()}`,
    bench.rows,
  );
  printTargets(targets);

  const markdown = [
    `# Coffer benchmark, ${started.toISOString().slice(0, 16).replace('T', ' ')}–${finished.toISOString().slice(11, 16)} UTC`,
    '',
    `Machine: ${describe}. Produced by \`npm run bench:all\`; every figure below is from this one sitting.`,
    '',
    '## Targets',
    '',
    markdownTargets(targets),
    '',
    '## Cases',
    '',
    benchHeader(),
    '',
    markdownRows(bench.rows),
    '',
    '## Against etcd',
    '',
    etcdHeader(),
    '',
    etcdMarkdown(etcd),
    '',
  ].join('\n');

  mkdirSync(resultsDir, { recursive: true });
  const base = join(resultsDir, `all-${finished.toISOString().replaceAll(':', '-')}`);
  writeFileSync(
    `${base}.json`,
    JSON.stringify(
      {
        started: started.toISOString(),
        finished: finished.toISOString(),
        machine: m,
        bench,
        etcd,
        targets,
      },
      null,
      2,
    ),
  );
  writeFileSync(`${base}.md`, markdown);
  console.log(`\nresults: ${base}.json\n         ${base}.md`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
