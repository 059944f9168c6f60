/**
 * The scheduled snapshots on the keyring screen (GET /v1/sys/snapshots): the schedule, when the next is
 * due, and each snapshot the directory holds, newest first. Restoring one is `coffer operator restore`
 * (docs/deployment.md): never from a browser.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiSnapshotList } from '../api/response-schemas.js';
import { api, messageOf } from './api.js';
import { Messages } from './messages.js';

const size = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

export function Snapshots() {
  const [list, setList] = useState<ApiSnapshotList | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    api<ApiSnapshotList>('GET', '/v1/sys/snapshots').then(setList, (err: unknown) =>
      setError(messageOf(err)),
    );
  }, []);

  return (
    <>
      <h2 id="snapshots-title">Snapshots</h2>
      <Messages error={error} />
      {list &&
        (list.scheduled ? (
          <>
            <p>
              One every <strong>{list.every}</strong>, the newest {list.keep} kept; the next is due{' '}
              {new Date(list.next_at!).toLocaleString()}.
            </p>
            {list.snapshots.length === 0 ? (
              <p>None taken yet.</p>
            ) : (
              <table class="snapshots" aria-labelledby="snapshots-title">
                <thead>
                  <tr>
                    <th scope="col">Snapshot</th>
                    <th scope="col">State of</th>
                    <th scope="col">Size</th>
                  </tr>
                </thead>
                <tbody>
                  {list.snapshots.map((s) => (
                    <tr>
                      <td>
                        <code>{s.name}</code>
                      </td>
                      <td>{new Date(s.taken_at).toLocaleString()}</td>
                      <td>{size(s.bytes)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <p class="hint">
              Restore one with <code>coffer operator restore --from FILE</code> on the server.
            </p>
          </>
        ) : (
          <p>
            No scheduled snapshots: the server takes them when <code>COFFER_SNAPSHOT_DIR</code> and{' '}
            <code>COFFER_SNAPSHOT_EVERY</code> are set.
          </p>
        ))}
    </>
  );
}
