/**
 * What the key page (key-view.tsx) offers on one older version to a session that may delete the key's type:
 * delete it alone (it reads as absent until restored; the others stay), restore it, or — behind a
 * confirmation that names it — destroy it for good (`?versions=`, the API's and the CLI's). The latest
 * version is the key's own: the key's delete and destroy act on it.
 */
import { useState } from 'preact/hooks';
import type { ApiVersionList } from '../api/response-schemas.js';
import { api, messageOf } from './api.js';

type Version = ApiVersionList['versions'][number];

export function VersionActions({
  path,
  version,
  onDone,
  onError,
}: {
  /** The key's API path (pathOf). */
  path: string;
  version: Version;
  /** Called with what was done, once it is. */
  onDone: (notice: string) => void;
  onError: (message: string) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const n = version.version;

  async function act(action: 'delete' | 'undelete' | 'destroy'): Promise<void> {
    try {
      if (action === 'undelete') await api('POST', `${path}?undelete=true&versions=${n}`);
      else
        await api('DELETE', `${path}?${action === 'destroy' ? 'destroy=true&' : ''}versions=${n}`);
      setConfirming(false);
      onDone(
        action === 'delete'
          ? `Deleted version ${n}: it reads as absent until restored.`
          : action === 'undelete'
            ? `Restored version ${n}.`
            : `Destroyed version ${n}: its value is erased.`,
      );
    } catch (err) {
      onError(messageOf(err));
    }
  }

  if (version.destroyed) return null;
  if (confirming)
    return (
      <span class="confirm-inline">
        Erase version {n} for good?{' '}
        <button type="button" class="danger" onClick={() => act('destroy')}>
          Destroy version {n}
        </button>{' '}
        <button type="button" onClick={() => setConfirming(false)}>
          Cancel
        </button>
      </span>
    );
  return (
    <span class="version-actions">
      {version.deleted_at ? (
        <button type="button" onClick={() => act('undelete')}>
          Restore version {n}
        </button>
      ) : (
        <button type="button" onClick={() => act('delete')}>
          Delete version {n}
        </button>
      )}{' '}
      <button type="button" class="danger" onClick={() => setConfirming(true)}>
        Destroy version {n}…
      </button>
    </span>
  );
}
