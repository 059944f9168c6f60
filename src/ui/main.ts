/**
 * The web console (docs/console.md): a page of its own, served at /ui/ under a strict Content-Security-Policy
 * (no inline script or style, nothing from elsewhere). It signs in once with a token (sign-in.ts) and then
 * calls the API with the session cookie (api.ts).
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, useCsrf } from './api.js';
import { AuditView, SealReportView } from './audit.js';
import { Browse } from './browse.js';
import { html } from './html.js';
import { KeyView } from './key-view.js';
import { KeyringView } from './keyring.js';
import { type Route, routeOf } from './routes.js';
import type { Session } from './session.js';
import { SignIn } from './sign-in.js';
import { RolesView, TokensView } from './tokens.js';

/** The system privileges of the session's token (GET /v1/auth/me): which screens it may use. */
function usePrivileges(session: Session | null | undefined): ReadonlySet<string> {
  const [privileges, setPrivileges] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => {
    if (!session) return;
    api<{ privileges: string[] }>('GET', '/v1/auth/me').then(
      (me) => setPrivileges(new Set(me.privileges)),
      () => setPrivileges(new Set()),
    );
  }, [session]);
  return privileges;
}

/** The page a route names. */
function page(route: Route, privileges: ReadonlySet<string>) {
  switch (route.page) {
    case 'key':
      return html`<${KeyView} namespace=${route.namespace} keyName=${route.key} />`;
    case 'tokens':
      return html`<${TokensView} listRoles=${privileges.has('manage_roles')} />`;
    case 'roles':
      return html`<${RolesView} />`;
    case 'keyring':
      return html`<${KeyringView}
        manage=${privileges.has('manage_keyring')}
        metrics=${privileges.has('read_metrics')}
      />`;
    case 'audit':
      return html`<${AuditView} />`;
    case 'seal-report':
      return html`<${SealReportView} />`;
    case 'browse':
      // A new namespace is a new Browse (its search, pages and pending loads start afresh).
      return html`<${Browse} key=${route.namespace} namespace=${route.namespace} />`;
    default:
      return html`<${Browse} key="" namespace=${undefined} />`;
  }
}

function useRoute(): Route {
  const [route, setRoute] = useState(routeOf(location.hash));
  useEffect(() => {
    const changed = () => setRoute(routeOf(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}

function App() {
  // undefined: not known yet; null: signed out.
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const route = useRoute();
  const privileges = usePrivileges(session);
  const may = (...any: string[]) => any.some((p) => privileges.has(p));

  const signedIn = (s: Session | null) => {
    useCsrf(s?.csrf);
    setSession(s);
  };

  useEffect(() => {
    api<Session | { signed_in: false }>('GET', '/v1/console/session').then(
      (s) => signedIn(s.signed_in ? s : null),
      (err: unknown) => setError(messageOf(err)),
    );
  }, []);

  async function signOut(): Promise<void> {
    try {
      await api('POST', '/v1/console/sign-out');
      signedIn(null);
      location.hash = '#/';
    } catch (err) {
      setError(messageOf(err));
    }
  }

  if (session === undefined) return html`<p class="loading" role="status">Loading…</p>`;
  if (session === null)
    return html`<${SignIn}
      onSignedIn=${signedIn}
      failure=${route.page === 'sign-in-failed' ? route.reason : undefined}
    />`;
  return html`
    <header class="bar">
      <a class="brand" href="#/">Coffer</a>
      <span class="who">
        Signed in as ${session.is_root ? 'root' : `${session.role} (${session.token_id})`}
      </span>
      <button type="button" onClick=${signOut}>Sign out</button>
    </header>
    <nav class="sections" aria-label="Sections">
      <a href="#/">Browse</a>
      ${may('manage_tokens', 'create_tokens', 'list_tokens') && html`<a href="#/tokens">Tokens</a>`}
      ${may('manage_roles') && html`<a href="#/roles">Roles</a>`}
      ${may('read_keyring', 'manage_keyring') && html`<a href="#/keyring">Keyring</a>`}
      ${may('read_audit') && html`<a href="#/audit">Audit log</a>`}
    </nav>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <main>${page(route, privileges)}</main>
  `;
}

render(html`<${App} />`, document.getElementById('app')!);
