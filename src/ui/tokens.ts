/**
 * Tokens: create one by role or by scopes (each field explained), shown once with a copy button and never
 * again; the tokens the session may see, revoked after a confirmation. Roles: every role with where it comes
 * from; a runtime role or a login role edited as the JSON of its PUT (the API checks it and says what is
 * wrong, field by field).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from './api.js';
import { html } from './html.js';

interface Token {
  readonly id: string;
  readonly role: string | null;
  readonly scopes: { namespace: string; read: boolean; write: boolean }[] | null;
  readonly metadata: Record<string, string>;
  readonly expires_at: string | null;
  readonly status?: string;
}

interface Role {
  readonly name: string;
  readonly source: 'built-in' | 'configuration' | 'runtime';
  readonly rules: { namespaces: string[]; actions: string[]; types: string[] }[];
  readonly privileges: string[];
}

/** `payments/prod:r` lines as the API's scopes; undefined when a line is not of that form. */
function scopesOf(text: string) {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const scopes = lines.map((line) => {
    const match = /^(.+):(r|w|rw)$/.exec(line);
    return match
      ? { namespace: match[1]!, read: match[2]!.includes('r'), write: match[2]!.includes('w') }
      : undefined;
  });
  return scopes.every((s) => s !== undefined) ? scopes : undefined;
}

export function TokensView({ listRoles }: { listRoles: boolean }) {
  const [tokens, setTokens] = useState<Token[]>([]);
  const [roles, setRoles] = useState<string[]>([]);
  const [made, setMade] = useState<{ token: string; id: string } | undefined>(undefined);
  const [revoking, setRevoking] = useState<string | undefined>(undefined);
  const [by, setBy] = useState<'role' | 'scopes'>('role');
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  async function load(): Promise<void> {
    try {
      setTokens((await api<{ tokens: Token[] }>('GET', '/v1/auth/tokens')).tokens);
      // Listing roles needs manage_roles; a token that may only create tokens is offered the built-in ones
      // (without asking: a refused request would log an error in the browser's console).
      const list = listRoles
        ? await api<{ roles: Role[] }>('GET', '/v1/sys/roles').catch(() => undefined)
        : undefined;
      setRoles(
        list
          ? list.roles.map((r) => r.name).filter((n) => n !== 'root')
          : ['admin', 'writer', 'reader', 'config-reader', 'auditor', 'metrics'],
      );
      setError(undefined);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  useEffect(() => {
    void load();
  }, []);

  async function create(event: Event): Promise<void> {
    event.preventDefault();
    const element = event.currentTarget as HTMLFormElement;
    const form = new FormData(element);
    const hours = Number(form.get('hours'));
    const name = String(form.get('name') ?? '').trim();
    const grant =
      by === 'role'
        ? { role: String(form.get('role')) }
        : { scopes: scopesOf(String(form.get('scopes'))) };
    if ('scopes' in grant && grant.scopes === undefined) {
      setError('Scopes: one per line, as namespace:r, namespace:w or namespace:rw (payments/*:r).');
      return;
    }
    try {
      const created = await api<{ token: string; id: string }>('POST', '/v1/auth/token', {
        ...grant,
        ...(hours > 0 ? { expires_in: Math.round(hours * 3600) } : {}),
        ...(name ? { metadata: { name } } : {}),
      });
      setMade({ token: created.token, id: created.id });
      element.reset();
      setError(undefined);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  async function revoke(id: string): Promise<void> {
    setRevoking(undefined);
    try {
      await api('DELETE', `/v1/auth/token/${encodeURIComponent(id)}`);
      setNotice(`Revoked ${id}, and the tokens it created.`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return html`
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">Tokens</h1>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      ${
        made &&
        html`<div class="value" aria-label="The new token">
          <h2>Token ${made.id}</h2>
          <p><strong>Copy it now: it is shown this once and never stored in clear.</strong></p>
          <pre tabindex="0">${made.token}</pre>
          <button type="button" onClick=${() =>
            navigator.clipboard.writeText(made.token).then(
              () => setNotice('Copied to the clipboard.'),
              () => setNotice('The browser did not allow copying: select the token instead.'),
            )}>Copy</button>
          <button type="button" onClick=${() => setMade(undefined)}>Done</button>
        </div>`
      }
      <h2>Create a token</h2>
      <form class="add" onSubmit=${create}>
        <fieldset>
          <legend>What it may do</legend>
          <label><input type="radio" name="by" checked=${by === 'role'} onChange=${() => setBy('role')} /> A role</label>
          <label><input type="radio" name="by" checked=${by === 'scopes'} onChange=${() => setBy('scopes')} /> Scopes</label>
        </fieldset>
        ${
          by === 'role'
            ? html`<label for="t-role">Role</label>
                <select id="t-role" name="role" aria-describedby="t-role-hint">
                  ${roles.map((r) => html`<option value=${r}>${r}</option>`)}
                </select>
                <p class="hint" id="t-role-hint">What each role may do is on the Roles page; a token never gets more than yours.</p>`
            : html`<label for="t-scopes">Scopes</label>
                <textarea id="t-scopes" name="scopes" rows="3" aria-describedby="t-scopes-hint"></textarea>
                <p class="hint" id="t-scopes-hint">One per line: a namespace (or one followed by /*, or *) and r, w or rw — payments/prod:r reads there, payments/*:rw reads and writes beneath payments.</p>`
        }
        <label for="t-hours">Lifetime (hours)</label>
        <input id="t-hours" name="hours" type="number" min="0" step="any" aria-describedby="t-hours-hint" />
        <p class="hint" id="t-hours-hint">Empty: the server's default. Never past the server's maximum, nor past your own token's expiry.</p>
        <label for="t-name">Name</label>
        <input id="t-name" name="name" maxLength="128" aria-describedby="t-name-hint" />
        <p class="hint" id="t-name-hint">Who or what it is for: shown in listings and in every audit entry of its requests.</p>
        <button type="submit">Create the token</button>
      </form>
      <h2>Active tokens</h2>
      <table class="tokens">
        <thead><tr><th scope="col">Id</th><th scope="col">Name</th><th scope="col">Grants</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr></thead>
        <tbody>
          ${tokens.map(
            (t) => html`<tr>
              <td>${t.id}</td>
              <td>${t.metadata.name ?? ''}</td>
              <td>${t.role ?? (t.scopes ?? []).map((s) => `${s.namespace}:${s.read ? 'r' : ''}${s.write ? 'w' : ''}`).join(' ')}</td>
              <td>${t.expires_at ? new Date(t.expires_at).toLocaleString() : 'never'}</td>
              <td>${
                revoking === t.id
                  ? html`<button type="button" class="danger" onClick=${() => revoke(t.id)}>Revoke ${t.id}</button>
                      <button type="button" onClick=${() => setRevoking(undefined)}>Cancel</button>`
                  : html`<button type="button" onClick=${() => setRevoking(t.id)} aria-label=${`Revoke ${t.id}…`}>Revoke…</button>`
              }</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </section>
  `;
}

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
      setRoles((await api<{ roles: Role[] }>('GET', '/v1/sys/roles')).roles);
      setLoginRoles(
        (
          await api<{ login_roles: { name: string; login_role: Record<string, unknown> }[] }>(
            'GET',
            '/v1/sys/login-roles',
          )
        ).login_roles,
      );
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

  return html`
    <section aria-labelledby="roles-title">
      <h1 id="roles-title">Roles</h1>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      ${
        editing &&
        html`<form class="add" onSubmit=${save}>
          <h2>${editing.name ? `Edit ${editing.name}` : `A new ${editing.kind === 'roles' ? 'role' : 'login role'}`}</h2>
          ${!editing.name && html`<label for="r-name">Name</label><input id="r-name" name="name" required pattern=${ROLE_NAME_PATTERN} />`}
          <label for="r-body">As JSON (the body of PUT /v1/sys/${editing.kind}/NAME)</label>
          <textarea id="r-body" name="body" rows="14" spellcheck=${false} value=${editing.text} aria-describedby=${editing.refused ? 'r-refused' : undefined}></textarea>
          ${editing.refused && html`<p id="r-refused" class="error" role="alert">Not saved: ${editing.refused}</p>`}
          ${editing.kind === 'login-roles' && html`<p class="hint">A client secret left out is kept while the client id stays the same.</p>`}
          <button type="submit">Save</button>
          <button type="button" onClick=${() => setEditing(undefined)}>Cancel</button>
        </form>`
      }
      <h2>Roles</h2>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">From</th><th scope="col">Rules</th><th scope="col">Privileges</th><th scope="col"><span class="visually-hidden">Edit</span></th></tr></thead>
        <tbody>
          ${roles.map(
            (r) => html`<tr>
              <td>${r.name}</td><td>${r.source}</td><td>${rulesText(r.rules)}</td><td>${r.privileges.join(', ')}</td>
              <td>${r.source === 'runtime' && html`<button type="button" onClick=${() => edit('roles', r.name, { rules: r.rules, privileges: r.privileges })} aria-label=${`Edit ${r.name}`}>Edit</button>`}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <button type="button" onClick=${() => edit('roles', '', { rules: [{ namespaces: ['team/*'], actions: ['read', 'list'], types: ['config'] }], privileges: [] })}>New role…</button>
      <h2>Login roles</h2>
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Issuer</th><th scope="col"><span class="visually-hidden">Edit</span></th></tr></thead>
        <tbody>
          ${loginRoles.map(
            (l) => html`<tr>
              <td>${l.name}</td><td>${String(l.login_role.issuer)}</td>
              <td><button type="button" onClick=${() => edit('login-roles', l.name, stripped(l.login_role))} aria-label=${`Edit ${l.name}`}>Edit</button></td>
            </tr>`,
          )}
        </tbody>
      </table>
      <button type="button" onClick=${() => edit('login-roles', '', { issuer: 'https://issuer.example.com', discovery: true, bound_audiences: ['coffer'], role: 'config-reader', ttl: 3600 })}>New login role…</button>
    </section>
  `;
}
