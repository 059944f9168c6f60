/**
 * The web console (docs/console.md): a page of its own, served at /ui/ under a strict Content-Security-Policy
 * (no inline script or style, nothing from elsewhere). It signs in once with a token (sign-in.ts) and then
 * calls the API with the session cookie (api.ts).
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf, useCsrf } from './api.js';
import { Browse } from './browse.js';
import { html } from './html.js';
import { KeyView } from './key-view.js';
import { type Route, routeOf } from './routes.js';
import type { Session } from './session.js';
import { SignIn } from './sign-in.js';

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
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <main>
      ${
        route.page === 'key'
          ? html`<${KeyView} namespace=${route.namespace} keyName=${route.key} />`
          : html`<${Browse} namespace=${route.page === 'browse' ? route.namespace : undefined} />`
      }
    </main>
  `;
}

render(html`<${App} />`, document.getElementById('app')!);
