/**
 * `coffer audit seal-report [--verify] [--json]`, offline: whether every stored version is sealed
 * (store/seal-report.ts); a table, or JSON with --json; a progress bar on a terminal; exit 0 when there
 * are no anomalies, 1 when there are.
 */

import cliProgress from 'cli-progress';
import type { CofferConfig } from '../config/schema.js';
import { KeyProviderError } from '../keys/key-provider.js';
import type { KeyringHolder } from '../store/keyring-store.js';
import type { SealReport } from '../store/seal-report.js';
import type { Store } from '../store/store.js';
import { type CommandIo, linesTo, type Out } from './command-io.js';
import { EXIT } from './exit-codes.js';
import { withKeyring, withStore } from './offline-store.js';

export async function sealReportCommand(
  config: CofferConfig,
  verify: boolean,
  json: boolean,
  io: CommandIo,
): Promise<number> {
  // Without --verify nothing is decrypted, so no master key is needed: the keyring is used when the configured
  // key opens it (to check each record's keyring version is still there), and the report is made without it
  // when it does not (an auditor's machine without the key).
  const open = async <T>(
    work: (store: Store, holder: KeyringHolder | null) => Promise<T>,
  ): Promise<T> => {
    const withKey = (): Promise<T> =>
      withKeyring(config, (store, _records, holder) => work(store, holder));
    if (verify) return withKey();
    try {
      return await withKey();
    } catch (err) {
      if (!(err instanceof KeyProviderError)) throw err;
      return withStore(config, (store) => work(store, null));
    }
  };
  const report = await open(async (store, holder) => {
    const tty = io.progress.isTTY === true;
    const bar = tty
      ? new cliProgress.SingleBar(
          {
            stream: io.progress,
            format: 'seal report [{bar}] {value}/{total} versions | {eta_formatted} left',
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : null;
    bar?.start(0, 0);
    try {
      return await store.sealReport(holder?.current() ?? null, {
        verify,
        now: Date.now(),
        ...(bar
          ? {
              onProgress: (done: number, total: number) => {
                bar.setTotal(total);
                bar.update(done);
              },
            }
          : {}),
      });
    } finally {
      bar?.stop();
    }
  });
  if (json) linesTo(io)(JSON.stringify(report, null, 2));
  else printReport(report, linesTo(io));
  return report.totals.anomalies === 0 && report.totals.record_failures === 0
    ? EXIT.ok
    : EXIT.failure;
}

const cell = (text: string | number, width: number, left = false): string =>
  left ? String(text).padEnd(width) : String(text).padStart(width);

function printReport(r: SealReport, out: Out): void {
  const t = r.totals;
  out(
    `seal report, ${r.generated_at}${r.verified ? ' (every record opened in memory)' : ' (structure only; --verify also opens each record)'}`,
  );
  out(
    `${t.versions} versions: ${t.secrets} secret, ${t.configs} config; ${t.sealed_secrets} of ${t.secrets} secrets sealed; ${t.anomalies} anomalies`,
  );
  out('');
  out(
    `${cell('keyring version', 18, true)}${cell('created', 26, true)}${cell('secrets', 10)}${cell('configs', 10)}`,
  );
  for (const v of r.keyring.versions) {
    out(
      `${cell(`${v.version}${v.active ? ' (active)' : ''}`, 18, true)}${cell(v.created_at ?? '(needs the key)', 26, true)}${cell(v.secrets, 10)}${cell(v.configs, 10)}`,
    );
  }
  if (r.keyring.active_version === null)
    out(
      '(made without the master key: whether each keyring version is still in the keyring is not checked)',
    );
  out('');
  const width = Math.min(60, Math.max(9, ...r.namespaces.map((n) => n.namespace.length))) + 2;
  out(`${cell('namespace', width, true)}${cell('secrets', 10)}${cell('configs', 10)}`);
  for (const n of r.namespaces)
    out(`${cell(n.namespace, width, true)}${cell(n.secrets, 10)}${cell(n.configs, 10)}`);
  out('');
  out(
    `${cell('store record', 18, true)}${cell('records', 10)}${cell(r.verified ? 'failed' : 'not sealed', 12)}`,
  );
  for (const k of r.records)
    out(`${cell(k.kind, 18, true)}${cell(k.records, 10)}${cell(k.failed, 12)}`);
  if (t.record_failures > 0)
    out(
      `RECORD FAILURES (${t.record_failures}): records of the store that failed their check are never used; the server logs each by kind and key`,
    );
  out('');
  if (t.anomalies === 0) {
    out('no anomalies: every secret version is sealed');
    return;
  }
  out(
    `ANOMALIES (${t.anomalies}${t.anomalies > r.anomalies.length ? `, the first ${r.anomalies.length} listed` : ''}):`,
  );
  for (const a of r.anomalies) out(`  ${a.namespace}/${a.key} v${a.version}: ${a.problem}`);
}
