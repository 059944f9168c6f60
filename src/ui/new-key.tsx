/**
 * A new key, from a browse page: its namespace (the one browsed, which may be changed: a namespace comes
 * into being with its first key), name, value and type (secret unless the person picks config). It is saved
 * only if no key of that name exists yet (?cas=0, else 412): an existing key is never overwritten from here,
 * its own page adds versions. Once saved, its page opens.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, messageOf, pathOf } from './api.js';
import { Messages } from './messages.js';
import { isKeyName, isNamespace, NAME_RULE } from './names.js';
import { keyHref } from './routes.js';
import { TypeField, type ValueType } from './value-type.js';

export function NewKey({ namespace }: { namespace: string | undefined }) {
  const [open, setOpen] = useState(false);
  const [type, setType] = useState<ValueType>('secret');
  const [error, setError] = useState<string | undefined>(undefined);
  /** The key that was already there: nothing was changed. */
  const [exists, setExists] = useState<{ namespace: string; key: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        New key…
      </button>
    );

  async function save(event: Event): Promise<void> {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const text = (name: string) =>
      (form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement).value;
    const ns = text('namespace').trim();
    const key = text('key').trim();
    setExists(undefined);
    if (!isNamespace(ns)) {
      setError(`The namespace: ${NAME_RULE} Up to 16 of them, joined by “/”.`);
      return;
    }
    if (!isKeyName(key)) {
      setError(`The key: ${NAME_RULE} It may not be “versions”.`);
      return;
    }
    setError(undefined);
    setBusy(true);
    try {
      await api('PUT', `${pathOf(ns, key)}?cas=0`, { value: text('value'), type });
      location.hash = keyHref(ns, key);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) setExists({ namespace: ns, key });
      else setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="add" onSubmit={save} aria-labelledby="new-key-title">
      <h2 id="new-key-title">New key</h2>
      <label for="new-key-namespace">Namespace</label>
      <input
        id="new-key-namespace"
        name="namespace"
        value={namespace ?? ''}
        required
        autocomplete="off"
        spellcheck={false}
        aria-describedby="new-key-namespace-hint"
      />
      <p class="hint" id="new-key-namespace-hint">
        Such as payments/prod: names joined by “/”. A namespace comes into being with its first key.
      </p>
      <label for="new-key-name">Key</label>
      <input
        id="new-key-name"
        name="key"
        required
        maxlength={128}
        autocomplete="off"
        spellcheck={false}
        aria-describedby="new-key-name-hint"
      />
      <p class="hint" id="new-key-name-hint">
        {NAME_RULE}
      </p>
      <label for="new-key-value">Value</label>
      <textarea id="new-key-value" name="value" rows={4} required spellcheck={false} />
      <TypeField id="new-key-type" value={type} onChange={setType} />
      <Messages error={error} />
      {exists && (
        <p class="error" role="alert">
          {exists.key} already exists in {exists.namespace}: nothing was changed.
          <a href={keyHref(exists.namespace, exists.key)}>Open {exists.key}</a> to add a version.
        </p>
      )}
      <button type="submit" disabled={busy}>
        Save the key
      </button>
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
    </form>
  );
}
