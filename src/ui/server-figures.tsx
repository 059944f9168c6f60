/**
 * A few of the server's metrics on the keyring screen (GET /v1/sys/metrics, for a session that may
 * read_metrics), read when the screen opens and again on "Refresh" — never on a timer, which would keep an
 * unattended session from its idle timeout (and write an audit entry every few seconds): requests and server errors, refused authentications, the
 * mean latency of storage and audit writes, writes per commit, held waits, and on PostgreSQL its pool and
 * notification lag. The whole set is for Prometheus (docs/operations.md).
 */
import { useEffect, useState } from 'preact/hooks';
import { apiText, messageOf } from './api.js';
import { Messages } from './messages.js';
import { mean, type Sample, samplesOf, total } from './prom.js';

const ms = (seconds: number | undefined): string =>
  seconds === undefined ? '—' : `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms`;
const whole = (n: number | undefined): string => (n === undefined ? '—' : String(Math.round(n)));

function figures(s: readonly Sample[]): [string, string][] {
  const requests = total(s, 'coffer_http_requests_total');
  const serverErrors = total(s, 'coffer_http_requests_total', { status_class: '5xx' }) ?? 0;
  const rows: [string, string][] = [
    ['Requests answered', `${whole(requests)} (${whole(serverErrors)} server errors)`],
    ['Refused authentications', whole(total(s, 'coffer_auth_failures_total'))],
    ['Storage write, mean', ms(mean(s, 'coffer_storage_write_duration_seconds'))],
    ['Audit write, mean', ms(mean(s, 'coffer_audit_write_duration_seconds'))],
  ];
  const perCommit = mean(s, 'coffer_storage_commit_writes');
  rows.push(['Writes per commit, mean', perCommit === undefined ? '—' : perCommit.toFixed(2)]);
  rows.push(['Reads held waiting for a change', whole(total(s, 'coffer_kv_waits_held'))]);
  const poolMax = total(s, 'coffer_pg_pool_max');
  if (poolMax !== undefined) {
    const busy = total(s, 'coffer_pg_pool_connections', { state: 'busy' });
    rows.push(['PostgreSQL connections in use', `${whole(busy)} of ${whole(poolMax)}`]);
    rows.push(['PostgreSQL notification lag', ms(total(s, 'coffer_pg_notification_lag_seconds'))]);
  }
  return rows;
}

export function ServerFigures() {
  const [samples, setSamples] = useState<Sample[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  const load = (): void => {
    apiText('/v1/sys/metrics').then(
      (text) => {
        setSamples(samplesOf(text));
        setError(undefined);
      },
      (err: unknown) => setError(messageOf(err)),
    );
  };
  useEffect(load, []);

  return (
    <>
      <h2 id="figures-title">Server</h2>
      <Messages error={error} />
      {samples && (
        <>
          <dl class="figures" aria-labelledby="figures-title">
            {figures(samples).map(([name, value]) => (
              <div>
                <dt>{name}</dt>
                <dd>{value}</dd>
              </div>
            ))}
          </dl>
          <p class="hint">
            Since each worker started, summed over the workers. Every metric is for Prometheus: see
            docs/operations.md.
          </p>
        </>
      )}
      <button type="button" onClick={load}>
        Refresh the figures
      </button>
    </>
  );
}
