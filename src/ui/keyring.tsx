/**
 * Admins: the keyring — its versions and how many records each seals, rotation, the rewrap of older records
 * to the active version with its progress followed live (once a second while it runs), and the retirement of
 * versions no record uses any more. Each action asks once more before it runs. Below, the scheduled
 * snapshots (snapshots.tsx) and, for a session that may read the metrics, a few of them (server-figures.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type {
  ApiKeyringStatus,
  ApiRetirement,
  ApiRewrap,
  ApiRotation,
} from '../api/response-schemas.js';
import { api, messageOf } from './api.js';
import { Messages } from './messages.js';
import { ServerFigures } from './server-figures.js';
import { Snapshots } from './snapshots.js';

const REWRAP_STARTED = 'Rewrap started.';

export function KeyringView({ manage, metrics }: { manage: boolean; metrics: boolean }) {
  const [status, setStatus] = useState<ApiKeyringStatus | undefined>(undefined);
  const [rewrap, setRewrap] = useState<ApiRewrap | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [asking, setAsking] = useState<'rotate' | 'rewrap' | 'retire' | undefined>(undefined);

  async function load(): Promise<void> {
    try {
      const [s, r] = await Promise.all([
        api<ApiKeyringStatus>('GET', '/v1/sys/keyring'),
        api<ApiRewrap>('GET', '/v1/sys/keyring/rewrap'),
      ]);
      setStatus(s);
      setRewrap(r);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  useEffect(() => {
    void load();
  }, []);

  // While a rewrap runs, its progress is read once a second; once it has finished, "Rewrap started." is
  // no longer news (the progress line says how it ended).
  useEffect(() => {
    if (!rewrap?.running) {
      setNotice((shown) => (shown === REWRAP_STARTED ? undefined : shown));
      return;
    }
    const timer = setTimeout(() => void load(), 1000);
    return () => clearTimeout(timer);
  }, [rewrap]);

  async function act(what: 'rotate' | 'rewrap' | 'retire'): Promise<void> {
    setAsking(undefined);
    try {
      if (what === 'rotate') {
        const r = await api<ApiRotation>('POST', '/v1/sys/keyring/rotate');
        setNotice(`Rotated: version ${r.active_version} is active (was ${r.previous_version}).`);
      } else if (what === 'rewrap') {
        await api('POST', '/v1/sys/keyring/rewrap', {});
        setNotice(REWRAP_STARTED);
      } else {
        const r = await api<ApiRetirement>('POST', '/v1/sys/keyring/retire');
        setNotice(
          r.retired.length > 0
            ? `Retired version(s) ${r.retired.join(', ')}.`
            : 'No version could be retired: each still seals records.',
        );
      }
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  const ask = (what: 'rotate' | 'rewrap' | 'retire', text: string, label: string) =>
    asking === what ? (
      <fieldset class="confirm" aria-label={label}>
        <p>{text}</p>
        <button type="button" class="danger" onClick={() => act(what)}>
          {label}
        </button>
        <button type="button" onClick={() => setAsking(undefined)}>
          Cancel
        </button>
      </fieldset>
    ) : (
      <button type="button" onClick={() => setAsking(what)}>
        {label}…
      </button>
    );

  const progress =
    rewrap && rewrap.total > 0 ? Math.round((rewrap.examined / rewrap.total) * 100) : 0;

  return (
    <section aria-labelledby="keyring-title">
      <h1 id="keyring-title">Keyring</h1>
      <Messages error={error} notice={notice} />
      {status && (
        <>
          <p>
            Key provider <strong>{status.provider}</strong>, wrapped by {status.wrapped_by}. Active
            version <strong>{status.active_version}</strong>.
            {status.unreadable > 0 && (
              <>
                {' '}
                <span class="error">{status.unreadable} record(s) unreadable.</span>
              </>
            )}
          </p>
          <table class="keyring">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Created</th>
                <th scope="col">Secrets</th>
                <th scope="col">Configs</th>
              </tr>
            </thead>
            <tbody>
              {status.versions.map((v) => (
                <tr>
                  <td>
                    {v.version}
                    {v.active ? ' (active)' : ''}
                  </td>
                  <td>{new Date(v.created_at).toLocaleString()}</td>
                  <td>{v.secrets}</td>
                  <td>{v.configs}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h2>Rewrap</h2>
      {rewrap && (
        <>
          <p role="status">
            {rewrap.running
              ? `Rewrapping to version ${rewrap.target_version}: ${rewrap.examined} of ${rewrap.total} examined, ${rewrap.rewrapped} rewrapped, ${rewrap.failed} failed.`
              : rewrap.finished_at
                ? `The last rewrap finished at ${new Date(rewrap.finished_at).toLocaleString()}: ${rewrap.rewrapped} rewrapped, ${rewrap.failed} failed.`
                : 'No rewrap has run.'}
          </p>
          {rewrap.running && (
            <progress max="100" value={progress} aria-label="Rewrap progress">
              {progress}%
            </progress>
          )}
        </>
      )}
      {manage ? (
        <>
          <h2>Change</h2>
          <p class="hint">
            Rotate makes a new active version for new records; rewrap moves older records to it;
            retire removes versions no record uses any more.
          </p>
          {ask(
            'rotate',
            'Make a new keyring version the active one? New records are sealed with it at once.',
            'Rotate',
          )}
          {ask(
            'rewrap',
            'Rewrap every record sealed with an older version to the active one? It runs in the background.',
            'Start rewrap',
          )}
          {ask(
            'retire',
            'Remove every keyring version that no record uses any more? A retired version cannot come back.',
            'Retire unused versions',
          )}
        </>
      ) : (
        <p class="hint">Changing the keyring needs the manage_keyring privilege (root).</p>
      )}
      <Snapshots />
      {metrics && <ServerFigures />}
    </section>
  );
}
