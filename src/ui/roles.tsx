/**
 * Roles: every role with where it comes from; a runtime role or a login role edited as the JSON of its PUT
 * (the API checks it and says what is wrong, field by field).
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiLoginRoleList, ApiRoleList } from '../api/response-schemas.js';
import { api, messageOf } from './api.js';
import { Messages } from './messages.js';

type Role = ApiRoleList['roles'][number];

/**
 * The name rule of a role, as the input's pattern: the browser compiles a pattern with the `v` flag, in
 * which a `-` ending a character class must be escaped (unescaped, Chromium logs an error and checks nothing).
 */
const ROLE_NAME_PATTERN = '[a-z][a-z0-9_\\-]{0,63}';

/** A role's rules in a line each: `payments/*: read, list (config, secret)`. */
function rulesText(rules: readonly { namespaces: string[]; actions: string[]; types: string[] }[]) {
  return rules.length === 0
    ? 'none'
    : rules
        .map((r) => `${r.namespaces.join(', ')}: ${r.actions.join(', ')} (${r.types.join(', ')})`)
        .join('; ');
}

export function RolesView() {
  const [roles, setRoles] = useState<Role[]>([]);
  const [loginRoles, setLoginRoles] = useState<
    { name: string; login_role: Record<string, unknown> }[]
  >([]);
  const [editing, setEditing] = useState<
    { kind: 'roles' | 'login-roles'; name: string; text: string; refused?: string } | undefined
  >(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  async function load(): Promise<void> {
    try {
      setRoles((await api<ApiRoleList>('GET', '/v1/sys/roles')).roles);
      setLoginRoles((await api<ApiLoginRoleList>('GET', '/v1/sys/login-roles')).login_roles);
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  useEffect(() => {
    void load();
  }, []);

  function edit(kind: 'roles' | 'login-roles', name: string, body: unknown): void {
    setEditing({ kind, name, text: JSON.stringify(body, null, 2) });
    setNotice(undefined);
  }

  async function save(event: Event): Promise<void> {
    event.preventDefault();
    if (!editing) return;
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const name = String(form.get('name') ?? editing.name).trim();
    let body: unknown;
    try {
      body = JSON.parse(String(form.get('body')));
    } catch {
      setEditing({
        ...editing,
        text: String(form.get('body')),
        refused: 'This is not valid JSON.',
      });
      return;
    }
    try {
      await api('PUT', `/v1/sys/${editing.kind}/${encodeURIComponent(name)}`, body);
      setNotice(`Saved ${name}: every worker and server enforces it within a second.`);
      setEditing(undefined);
      setError(undefined);
      await load();
    } catch (err) {
      // What the person wrote stays in the editor, the refusal beside it.
      setEditing({ ...editing, text: String(form.get('body')), refused: messageOf(err) });
    }
  }

  const stripped = (l: Record<string, unknown>) => {
    const { id: _id, updated_at: _at, oidc, ...rest } = l;
    if (!oidc) return rest;
    const { client_secret_set: _set, ...shown } = oidc as Record<string, unknown>;
    return { ...rest, oidc: shown };
  };

  return (
    <section aria-labelledby="roles-title">
      <h1 id="roles-title">Roles</h1>
      <Messages error={error} notice={notice} />
      {editing && (
        <form class="add" onSubmit={save}>
          <h2>
            {editing.name
              ? `Edit ${editing.name}`
              : `A new ${editing.kind === 'roles' ? 'role' : 'login role'}`}
          </h2>
          {!editing.name && (
            <>
              <label for="r-name">Name</label>
              <input id="r-name" name="name" required pattern={ROLE_NAME_PATTERN} />
            </>
          )}
          <label for="r-body">As JSON (the body of PUT /v1/sys/{editing.kind}/NAME)</label>
          <textarea
            id="r-body"
            name="body"
            rows={14}
            spellcheck={false}
            value={editing.text}
            aria-describedby={editing.refused ? 'r-refused' : undefined}
          />
          {editing.refused && (
            <p id="r-refused" class="error" role="alert">
              Not saved: {editing.refused}
            </p>
          )}
          {editing.kind === 'login-roles' && (
            <p class="hint">A client secret left out is kept while the client id stays the same.</p>
          )}
          <button type="submit">Save</button>
          <button type="button" onClick={() => setEditing(undefined)}>
            Cancel
          </button>
        </form>
      )}
      <h2>Roles</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">From</th>
            <th scope="col">Rules</th>
            <th scope="col">Privileges</th>
            <th scope="col">
              <span class="visually-hidden">Edit</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {roles.map((r) => (
            <tr>
              <td>{r.name}</td>
              <td>{r.source}</td>
              <td>{rulesText(r.rules)}</td>
              <td>{r.privileges.join(', ')}</td>
              <td>
                {r.source === 'runtime' && (
                  <button
                    type="button"
                    onClick={() =>
                      edit('roles', r.name, { rules: r.rules, privileges: r.privileges })
                    }
                    aria-label={`Edit ${r.name}`}
                  >
                    Edit
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <button
        type="button"
        onClick={() =>
          edit('roles', '', {
            rules: [{ namespaces: ['team/*'], actions: ['read', 'list'], types: ['config'] }],
            privileges: [],
          })
        }
      >
        New role…
      </button>
      <h2>Login roles</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Issuer</th>
            <th scope="col">
              <span class="visually-hidden">Edit</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {loginRoles.map((l) => (
            <tr>
              <td>{l.name}</td>
              <td>{String(l.login_role.issuer)}</td>
              <td>
                <button
                  type="button"
                  onClick={() => edit('login-roles', l.name, stripped(l.login_role))}
                  aria-label={`Edit ${l.name}`}
                >
                  Edit
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <button
        type="button"
        onClick={() =>
          edit('login-roles', '', {
            issuer: 'https://issuer.example.com',
            discovery: true,
            bound_audiences: ['coffer'],
            role: 'config-reader',
            ttl: 3600,
          })
        }
      >
        New login role…
      </button>
    </section>
  );
}
