/**
 * One key: its versions (type and time, never a value), the value of the chosen version hidden until the
 * person reveals it (each reveal is one read, audited as the session's token; the value is never in the
 * page before that), a copy button, a form for a new version (of the latest version's type unless the person
 * picks the other: saving without looking never changes a key's type), and deletion behind a confirmation
 * that names the key. A deleted key (in the trash) shows since when, its versions still revealable, with
 * a restore and — behind a confirmation that names it — destroying it for good. A version deleted or
 * destroyed alone is marked so, with nothing to reveal; an older version can be deleted, restored or
 * destroyed alone (version-actions.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiEntry, ApiEntryInfo, ApiVersionList } from '../api/response-schemas.js';
import { ApiError, api, messageOf, pathOf } from './api.js';
import { type Capability, mayDo } from './capabilities.js';
import { Messages } from './messages.js';
import { namespaceHref } from './routes.js';
import { TypeField, type ValueType } from './value-type.js';
import { VersionActions } from './version-actions.js';

type Version = ApiVersionList['versions'][number];

export function KeyView({
  namespace,
  keyName,
  capabilities,
}: {
  namespace: string;
  keyName: string;
  /** What the session may do where: only those controls are shown (the API decides every call). */
  capabilities: readonly Capability[];
}) {
  const [versions, setVersions] = useState<Version[] | undefined>(undefined);
  const [current, setCurrent] = useState(0);
  const [revealed, setRevealed] = useState<ApiEntry | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [confirming, setConfirming] = useState<'delete' | 'destroy' | undefined>(undefined);
  /** When the key was deleted, while it is in the trash. */
  const [deletedAt, setDeletedAt] = useState<string | undefined>(undefined);
  const [destroyed, setDestroyed] = useState(false);
  /** The type the person picked for a new version; until then, the latest version's. */
  const [pickedType, setPickedType] = useState<ValueType | undefined>(undefined);
  const latestType = versions?.find((v) => v.version === current)?.type;
  const newType = pickedType ?? latestType ?? 'secret';
  const path = pathOf(namespace, keyName);

  /** The versions, read again; whether that worked (if not, the error says why). */
  async function load(): Promise<boolean> {
    try {
      const list = await api<ApiVersionList>('GET', `${path}/versions`);
      setVersions([...list.versions].reverse());
      setCurrent(list.current_version);
      setDeletedAt(list.deleted_at);
      setError(undefined);
      return true;
    } catch (err) {
      setError(messageOf(err));
      return false;
    }
  }

  useEffect(() => {
    setRevealed(undefined);
    setPickedType(undefined);
    void load();
  }, [namespace, keyName]);

  async function reveal(version: number): Promise<void> {
    try {
      setRevealed(await api<ApiEntry>('GET', `${path}?version=${version}`));
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  async function copy(): Promise<void> {
    if (!revealed) return;
    try {
      await navigator.clipboard.writeText(revealed.value);
      setNotice('Copied to the clipboard.');
    } catch {
      setNotice('The browser did not allow copying: select the value instead.');
    }
  }

  async function addVersion(event: Event): Promise<void> {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const value = (form.elements.namedItem('value') as HTMLTextAreaElement).value;
    try {
      // Only on top of the latest version shown: another person's version saved meanwhile is never
      // superseded unseen.
      const saved = await api<ApiEntryInfo>('PUT', `${path}?cas=${current}`, {
        value,
        type: newType,
      });
      form.reset();
      setPickedType(undefined);
      setRevealed(undefined);
      setNotice(`Version ${saved.version} saved.`);
      await load();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 412)) {
        setError(messageOf(err));
        return;
      }
      setNotice(undefined);
      if (await load())
        setError(
          'Another version was saved meanwhile, so yours was not: the versions below are up to date now. Save again to put yours on top.',
        );
    }
  }

  /** Delete (to the trash), restore from it, or destroy for good; then the page shows what is now. */
  async function change(kind: 'delete' | 'restore' | 'destroy'): Promise<void> {
    try {
      if (kind === 'delete') await api('DELETE', path);
      else if (kind === 'restore') await api('POST', `${path}?undelete=true`);
      else await api('DELETE', `${path}?destroy=true`);
      setConfirming(undefined);
      setRevealed(undefined);
      if (kind === 'destroy') {
        setDestroyed(true);
        return;
      }
      setNotice(
        kind === 'delete'
          ? `Deleted ${keyName}: it reads as absent now. Its versions are kept in the trash until it is destroyed.`
          : `Restored ${keyName}, as it was.`,
      );
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  if (destroyed)
    return (
      <section>
        <h1>{keyName}</h1>
        <p role="status">
          Destroyed {keyName} in {namespace}: every version is erased.
        </p>
        <a href={namespaceHref(namespace)}>Back to {namespace}</a>
      </section>
    );

  return (
    <section aria-labelledby="key-title">
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/">All namespaces</a> / <a href={namespaceHref(namespace)}>{namespace}</a>
      </nav>
      <h1 id="key-title">{keyName}</h1>
      <Messages error={error} notice={notice} />
      {deletedAt && (
        <p class="deleted">
          Deleted {new Date(deletedAt).toLocaleString()}: in the trash. It reads as absent and is in
          no listing; its versions below are kept.
        </p>
      )}
      {revealed && (
        <section class="value" aria-label="Revealed value">
          <h2>
            Version {revealed.version} ({revealed.type})
          </h2>
          <pre tabindex={0}>{revealed.value}</pre>
          <button type="button" onClick={copy}>
            Copy
          </button>
          <button type="button" onClick={() => setRevealed(undefined)}>
            Hide
          </button>
        </section>
      )}
      <h2>Versions</h2>
      {versions === undefined ? (
        !error && (
          <p class="loading" role="status">
            Loading…
          </p>
        )
      ) : (
        <table class="versions">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Type</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="visually-hidden">Value</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr>
                <td>
                  {v.version}
                  {v.version === current ? ' (latest)' : ''}
                </td>
                <td>{v.type}</td>
                <td>{new Date(v.created_at).toLocaleString()}</td>
                <td>
                  {v.destroyed ? (
                    <span class="muted">destroyed</span>
                  ) : v.deleted_at ? (
                    <span class="muted">deleted {new Date(v.deleted_at).toLocaleString()}</span>
                  ) : mayDo(capabilities, 'read', namespace, v.type) ? (
                    <button
                      type="button"
                      onClick={() => reveal(v.version)}
                      aria-label={`Reveal version ${v.version}`}
                    >
                      Reveal
                    </button>
                  ) : (
                    <span class="muted">not readable with this session</span>
                  )}
                  {v.deletes_at && !v.deleted_at && !v.destroyed && (
                    <span class="muted">
                      {' '}
                      deleted from {new Date(v.deletes_at).toLocaleString()}
                    </span>
                  )}
                  {v.version !== current && mayDo(capabilities, 'delete', namespace) && (
                    <VersionActions
                      path={path}
                      version={v}
                      onDone={(done) => {
                        setRevealed(undefined);
                        setNotice(done);
                        void load();
                      }}
                      onError={setError}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {mayDo(capabilities, 'write', namespace) && !deletedAt && (
        <>
          <h2>Add a version</h2>
          <form class="add" onSubmit={addVersion}>
            <label for="new-value">New value</label>
            <textarea id="new-value" name="value" rows={4} required spellcheck={false} />
            <TypeField
              id="new-type"
              value={newType}
              onChange={setPickedType}
              note="the form starts at the latest version's type"
            />
            <button type="submit" disabled={versions === undefined}>
              Save a new version
            </button>
          </form>
        </>
      )}
      {!mayDo(capabilities, 'delete', namespace) ? null : confirming === 'delete' ? (
        <fieldset class="confirm" aria-labelledby="confirm-text">
          <p id="confirm-text">
            Delete <strong>{keyName}</strong> from <strong>{namespace}</strong>? It will read as
            absent; its versions stay in the trash, and it can be restored.
          </p>
          <button type="button" class="danger" onClick={() => change('delete')}>
            Delete {keyName}
          </button>
          <button type="button" onClick={() => setConfirming(undefined)}>
            Cancel
          </button>
        </fieldset>
      ) : confirming === 'destroy' ? (
        <fieldset class="confirm" aria-labelledby="confirm-text">
          <p id="confirm-text">
            Destroy <strong>{keyName}</strong> in <strong>{namespace}</strong>: erase every one of
            its versions for good? This cannot be undone.
          </p>
          <button type="button" class="danger" onClick={() => change('destroy')}>
            Destroy {keyName}
          </button>
          <button type="button" onClick={() => setConfirming(undefined)}>
            Cancel
          </button>
        </fieldset>
      ) : (
        <>
          <h2>{deletedAt ? 'The trash' : 'Delete'}</h2>
          {deletedAt ? (
            <button type="button" onClick={() => change('restore')}>
              Restore {keyName}
            </button>
          ) : (
            <button type="button" class="danger" onClick={() => setConfirming('delete')}>
              Delete this key…
            </button>
          )}
          <button type="button" class="danger" onClick={() => setConfirming('destroy')}>
            Destroy for good…
          </button>
        </>
      )}
    </section>
  );
}
