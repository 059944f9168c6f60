/**
 * Auditors: the audit log with the API's filters and paging (each entry's details on demand), the log's
 * verification (intact, or where it first broke and why), and the seal report of the stored records.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiAuditPage, ApiSealReport, ApiVerification } from '../api/response-schemas.js';
import { AUDIT_FILTER_NAMES, AUDIT_FILTERS } from '../model/audit-filters.js';
import { api, messageOf } from './api.js';
import { Messages } from './messages.js';

/**
 * An entry as the API types it (its head), with the fields of its kind this view reads (docs/audit.md; the
 * API declares the rest open).
 */
type Entry = ApiAuditPage['entries'][number] & {
  readonly action?: string;
  readonly event?: string;
  readonly token_id?: string | null;
  readonly token_name?: string;
  readonly namespace?: string;
  readonly key?: string;
  readonly version?: number;
  readonly outcome?: { readonly status: number; readonly code: string | null };
};

export function AuditView() {
  const [entries, setEntries] = useState<Entry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [query, setQuery] = useState('');
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [verdict, setVerdict] = useState<string | undefined>(undefined);

  async function load(search: string, after: string | null): Promise<void> {
    try {
      const page = await api<ApiAuditPage & { entries: Entry[] }>(
        'GET',
        `/v1/sys/audit?limit=50&order=newest${search ? `&${search}` : ''}${after ? `&cursor=${encodeURIComponent(after)}` : ''}`,
      );
      setEntries((before) => (after ? [...before, ...page.entries] : page.entries));
      setCursor(page.next_cursor);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  useEffect(() => {
    void load('', null);
  }, []);

  function filter(event: Event): void {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const search = new URLSearchParams();
    for (const [name, value] of form)
      if (String(value).trim() !== '') search.set(name, String(value).trim());
    setQuery(search.toString());
    setOpen(undefined);
    void load(search.toString(), null);
  }

  async function verify(): Promise<void> {
    setVerdict('Verifying…');
    try {
      const v = await api<ApiVerification>('GET', '/v1/sys/audit/verify');
      setVerdict(
        v.intact
          ? `Intact: ${v.entries} ${v.entries === 1 ? 'entry' : 'entries'} in ${v.chains} ${v.chains === 1 ? 'chain' : 'chains'}, ${v.files} ${v.files === 1 ? 'file' : 'files'}, checked against this server's own files and store. A data directory put back whole from an older copy would verify too: coffer audit verify --against holds the log against an audit stream's copy.`
          : `Broken: first at ${v.file} line ${v.line}${v.seq === null ? '' : ` (seq ${v.seq})`}: ${v.reason}`,
      );
    } catch (err) {
      setVerdict(undefined);
      setError(messageOf(err));
    }
  }

  const what = (e: Entry): string =>
    [e.namespace, e.key, e.version === undefined ? undefined : `v${e.version}`]
      .filter((x) => x !== undefined)
      .join(' ');

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <p>
        <button type="button" onClick={verify}>
          Verify the log
        </button>
        <a href="#/seal-report">Seal report</a>
      </p>
      {verdict && (
        <p role="status" class={verdict.startsWith('Broken') ? 'error' : 'notice'}>
          {verdict}
        </p>
      )}
      <form class="filters" onSubmit={filter}>
        {AUDIT_FILTER_NAMES.map((name) => (
          <div>
            <label for={`f-${name}`}>{AUDIT_FILTERS[name].label}</label>
            <input id={`f-${name}`} name={name} />
          </div>
        ))}
        <button type="submit">Search</button>
      </form>
      <Messages error={error} />
      <table class="audit">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Action</th>
            <th scope="col">Token</th>
            <th scope="col">On</th>
            <th scope="col">Outcome</th>
            <th scope="col">
              <span class="visually-hidden">Details</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => {
            const id = `${e.chain}:${e.seq}`;
            return (
              <>
                <tr>
                  <td>{new Date(e.ts).toLocaleString()}</td>
                  <td>{e.action ?? e.event ?? e.kind}</td>
                  <td>{e.token_name ?? e.token_id ?? '—'}</td>
                  <td>{what(e)}</td>
                  <td>{e.outcome ? e.outcome.status : ''}</td>
                  <td>
                    <button
                      type="button"
                      aria-expanded={open === id}
                      onClick={() => setOpen(open === id ? undefined : id)}
                    >
                      Details
                    </button>
                  </td>
                </tr>
                {open === id && (
                  <tr>
                    <td colspan={6}>
                      <pre tabindex={0}>{JSON.stringify(e, null, 2)}</pre>
                    </td>
                  </tr>
                )}
              </>
            );
          })}
        </tbody>
      </table>
      {entries.length === 0 && !error && <p>No entries.</p>}
      {cursor && (
        <button type="button" onClick={() => load(query, cursor)}>
          Show more
        </button>
      )}
    </section>
  );
}

export function SealReportView() {
  const [report, setReport] = useState<ApiSealReport | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    api<ApiSealReport>('GET', '/v1/sys/seal-report').then(setReport, (err: unknown) =>
      setError(messageOf(err)),
    );
  }, []);

  return (
    <section aria-labelledby="seal-title">
      <h1 id="seal-title">Seal report</h1>
      <Messages error={error} />
      {!report && !error && (
        <p class="loading" role="status">
          Reading every stored record…
        </p>
      )}
      {report && (
        <>
          <p
            role="status"
            class={report.totals.anomalies + report.totals.record_failures > 0 ? 'error' : 'notice'}
          >{`${report.totals.versions} versions (${report.totals.secrets} secrets, ${report.totals.configs} configs); ${report.totals.sealed_secrets} secrets sealed; ${report.totals.anomalies} anomalies; ${report.totals.record_failures} records failed their check.`}</p>
          <h2>Namespaces</h2>
          <table>
            <thead>
              <tr>
                <th scope="col">Namespace</th>
                <th scope="col">Secrets</th>
                <th scope="col">Configs</th>
              </tr>
            </thead>
            <tbody>
              {report.namespaces.map((n) => (
                <tr>
                  <td>{n.namespace}</td>
                  <td>{n.secrets}</td>
                  <td>{n.configs}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Anomalies</h2>
          {report.anomalies.length === 0 ? (
            <p>None: every secret version is sealed.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Namespace</th>
                  <th scope="col">Key</th>
                  <th scope="col">Version</th>
                  <th scope="col">Problem</th>
                </tr>
              </thead>
              <tbody>
                {report.anomalies.map((a) => (
                  <tr>
                    <td>{a.namespace}</td>
                    <td>{a.key}</td>
                    <td>{a.version}</td>
                    <td>{a.problem}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h2>The store's own records</h2>
          <table>
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Records</th>
                <th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              {report.records.map((r) => (
                <tr>
                  <td>{r.kind}</td>
                  <td>{r.records}</td>
                  <td>{r.failed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
