/**
 * The choice of a value's type, secret or config, with what the difference means: for a new key
 * (new-key.tsx) and for a key's new version (key-view.tsx).
 */

export type ValueType = 'secret' | 'config';

export function TypeField({
  id,
  value,
  onChange,
  note,
}: {
  id: string;
  value: ValueType;
  onChange: (type: ValueType) => void;
  /** Said after the explanation. */
  note?: string;
}) {
  return (
    <>
      <label for={id}>Type</label>
      <select
        id={id}
        name="type"
        aria-describedby={`${id}-hint`}
        value={value}
        onChange={(e: Event) => onChange((e.currentTarget as HTMLSelectElement).value as ValueType)}
      >
        <option value="secret">secret</option>
        <option value="config">config</option>
      </select>
      <p class="hint" id={`${id}-hint`}>
        A secret is encrypted with its own data key and read only by roles that may read secrets; a
        config value is stored readable and any role that reads the namespace may read it. A key may
        change type from one version to the next{note ? `; ${note}` : ''}.
      </p>
    </>
  );
}
