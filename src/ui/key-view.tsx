/**
 * One key: its versions (type and time, never a value), the value of the chosen version hidden until the
 * person reveals it (each reveal is one read, audited as the session's token; the value is never in the
 * page before that), a copy button, a form for a new version (of the latest version's type unless the person
 * picks the other: saving without looking never changes a key's type), and deletion behind a confirmation
 * that names the key.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiEntry, ApiEntryInfo, ApiVersionList } from '../api/response-schemas.js';
import { ApiError, api, messageOf, pathOf } from './api.js';
import { type Capability, mayDo } from './capabilities.js';
import { Messages } from './messages.js';
import { namespaceHref } from './routes.js';
import { TypeField, type ValueType } from './value-type.js';

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
  const [confirming, setConfirming] = useState(false);
  const [deleted, setDeleted] = useState(false);
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

  async function remove(): Promise<void> {
    try {
      await api('DELETE', path);
      setDeleted(true);
      setConfirming(false);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  if (deleted)
    return (
      <section>
        <h1>{keyName}</h1>
        <p role="status">
          Deleted {keyName} from {namespace}, with all its versions.
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
                  {mayDo(capabilities, 'read', namespace, v.type) ? (
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
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {mayDo(capabilities, 'write', namespace) && (
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
      {!mayDo(capabilities, 'delete', namespace) ? null : confirming ? (
        <fieldset class="confirm" aria-labelledby="confirm-text">
          <p id="confirm-text">
            Delete <strong>{keyName}</strong> from <strong>{namespace}</strong>, with all its
            versions? This cannot be undone.
          </p>
          <button type="button" class="danger" onClick={remove}>
            Delete {keyName}
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </fieldset>
      ) : (
        <>
          <h2>Delete</h2>
          <button type="button" class="danger" onClick={() => setConfirming(true)}>
            Delete this key…
          </button>
        </>
      )}
    </section>
  );
}
