/**
 * Tokens: create one by role or by scopes (each field explained), shown once with a copy button and never
 * again; the tokens the session may see, revoked after a confirmation. The roles have their own screen
 * (roles.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type { ApiCreatedToken, ApiRoleList, ApiTokenList } from '../api/response-schemas.js';
import { api, messageOf } from './api.js';
import { Messages } from './messages.js';

type Token = ApiTokenList['tokens'][number];

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
      setTokens((await api<ApiTokenList>('GET', '/v1/auth/tokens')).tokens);
      // Listing roles needs manage_roles; a token that may only create tokens is offered the built-in ones
      // (without asking: a refused request would log an error in the browser's console).
      const list = listRoles
        ? await api<ApiRoleList>('GET', '/v1/sys/roles').catch(() => undefined)
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
      const created = await api<ApiCreatedToken>('POST', '/v1/auth/token', {
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

  return (
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">Tokens</h1>
      <Messages error={error} notice={notice} />
      {made && (
        <section class="value" aria-label="The new token">
          <h2>Token {made.id}</h2>
          <p>
            <strong>Copy it now: it is shown this once and never stored in clear.</strong>
          </p>
          <pre tabindex={0}>{made.token}</pre>
          <button
            type="button"
            onClick={() =>
              navigator.clipboard.writeText(made.token).then(
                () => setNotice('Copied to the clipboard.'),
                () => setNotice('The browser did not allow copying: select the token instead.'),
              )
            }
          >
            Copy
          </button>
          <button type="button" onClick={() => setMade(undefined)}>
            Done
          </button>
        </section>
      )}
      <h2>Create a token</h2>
      <form class="add" onSubmit={create}>
        <fieldset>
          <legend>What it may do</legend>
          <label>
            <input type="radio" name="by" checked={by === 'role'} onChange={() => setBy('role')} />{' '}
            A role
          </label>
          <label>
            <input
              type="radio"
              name="by"
              checked={by === 'scopes'}
              onChange={() => setBy('scopes')}
            />{' '}
            Scopes
          </label>
        </fieldset>
        {by === 'role' ? (
          <>
            <label for="t-role">Role</label>
            <select id="t-role" name="role" aria-describedby="t-role-hint">
              {roles.map((r) => (
                <option value={r}>{r}</option>
              ))}
            </select>
            <p class="hint" id="t-role-hint">
              What each role may do is on the Roles page; a token never gets more than yours.
            </p>
          </>
        ) : (
          <>
            <label for="t-scopes">Scopes</label>
            <textarea id="t-scopes" name="scopes" rows={3} aria-describedby="t-scopes-hint" />
            <p class="hint" id="t-scopes-hint">
              One per line: a namespace (or one followed by /*, or *) and r, w or rw —
              payments/prod:r reads there, payments/*:rw reads and writes beneath payments.
            </p>
          </>
        )}
        <label for="t-hours">Lifetime (hours)</label>
        <input
          id="t-hours"
          name="hours"
          type="number"
          min="0"
          step="any"
          aria-describedby="t-hours-hint"
        />
        <p class="hint" id="t-hours-hint">
          Empty: the server's default. Never past the server's maximum, nor past your own token's
          expiry.
        </p>
        <label for="t-name">Name</label>
        <input id="t-name" name="name" maxLength={128} aria-describedby="t-name-hint" />
        <p class="hint" id="t-name-hint">
          Who or what it is for: shown in listings and in every audit entry of its requests.
        </p>
        <button type="submit">Create the token</button>
      </form>
      <h2>Active tokens</h2>
      <table class="tokens">
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Name</th>
            <th scope="col">Grants</th>
            <th scope="col">Expires</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span class="visually-hidden">Revoke</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((t) => (
            <tr>
              <td>{t.id}</td>
              <td>{t.metadata.name ?? ''}</td>
              <td>
                {t.role ??
                  (t.scopes ?? [])
                    .map((s) => `${s.namespace}:${s.read ? 'r' : ''}${s.write ? 'w' : ''}`)
                    .join(' ')}
              </td>
              <td>{t.expires_at ? new Date(t.expires_at).toLocaleString() : 'never'}</td>
              <td>
                {t.status === 'role_deleted'
                  ? 'refused: its role was deleted'
                  : (t.status ?? 'active')}
              </td>
              <td>
                {revoking === t.id ? (
                  <>
                    <button type="button" class="danger" onClick={() => revoke(t.id)}>
                      Revoke {t.id}
                    </button>
                    <button type="button" onClick={() => setRevoking(undefined)}>
                      Cancel
                    </button>
                  </>
                ) : (
                  <button
                    type="button"
                    onClick={() => setRevoking(t.id)}
                    aria-label={`Revoke ${t.id}…`}
                  >
                    Revoke…
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
