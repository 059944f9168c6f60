/**
 * The web console (docs/console.md): a page of its own, served at /ui/ under a strict Content-Security-Policy
 * (no inline script or style, nothing from elsewhere). It signs in once with a token (sign-in.tsx) and then
 * calls the API with the session cookie (api.ts).
 *
 * An unattended page puts itself away: once it has made no call for the session's idle timeout (or the
 * session has reached its lifetime), it drops what it showed at once — a revealed value first — and asks
 * whether the session lives. If not, it is back at the sign-in, saying why; if it does (used in another
 * tab), it waits, showing nothing and calling nothing, until the person chooses to go on. A call refused
 * with 401 brings it back to the sign-in too.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiSelf } from '../api/response-schemas.js';
import { api, currentSession, lastUseAt, messageOf, useCsrf, watchSession } from './api.js';
import { AuditView, SealReportView } from './audit.js';
import { Browse } from './browse.js';
import type { Capability } from './capabilities.js';
import { KeyView } from './key-view.js';
import { KeyringView } from './keyring.js';
import { Messages } from './messages.js';
import { RolesView } from './roles.js';
import { type Route, routeOf } from './routes.js';
import type { Session } from './session.js';
import { SignIn } from './sign-in.js';
import { TokensView } from './tokens.js';
import { WebhooksView } from './webhooks.js';

/** What the session's token is (GET /v1/auth/me): its system privileges, and what it may do where. */
interface Rights {
  readonly privileges: ReadonlySet<string>;
  readonly capabilities: readonly Capability[];
}

const NO_RIGHTS: Rights = { privileges: new Set(), capabilities: [] };

/** The rights of the session's token: which screens it may use, and which controls each shows. */
function useRights(session: Session | null | undefined): Rights {
  const [rights, setRights] = useState<Rights>(NO_RIGHTS);
  useEffect(() => {
    if (!session) return;
    api<ApiSelf>('GET', '/v1/auth/me').then(
      (me) => setRights({ privileges: new Set(me.privileges), capabilities: me.capabilities }),
      () => setRights(NO_RIGHTS),
    );
  }, [session]);
  return rights;
}

/** `page` when the route is one of `pages` (a key's page is Browse's), for the navigation's aria-current. */
function current(route: Route, ...pages: string[]): 'page' | undefined {
  const section = route.page === 'key' ? 'browse' : route.page;
  return pages.includes(section) ? 'page' : undefined;
}

/** The page a route names. */
function page(route: Route, { privileges, capabilities }: Rights) {
  switch (route.page) {
    case 'key':
      return (
        <KeyView namespace={route.namespace} keyName={route.key} capabilities={capabilities} />
      );
    case 'tokens':
      return <TokensView listRoles={privileges.has('manage_roles')} />;
    case 'roles':
      return <RolesView />;
    case 'webhooks':
      return <WebhooksView />;
    case 'keyring':
      return (
        <KeyringView
          manage={privileges.has('manage_keyring')}
          metrics={privileges.has('read_metrics')}
        />
      );
    case 'audit':
      return <AuditView />;
    case 'seal-report':
      return <SealReportView />;
    case 'browse':
      // A new namespace is a new Browse (its search, pages and pending loads start afresh).
      return (
        <Browse key={route.namespace} namespace={route.namespace} capabilities={capabilities} />
      );
    default:
      return <Browse key="" namespace={undefined} capabilities={capabilities} />;
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

/** Past a deadline, the page waits this much longer before it asks (for the request's way to the server). */
const GRACE_MS = 2_000;

/** `seconds` in words: "15 minutes", "90 seconds". */
function span(seconds: number): string {
  if (seconds % 60 !== 0) return `${seconds} seconds`;
  const minutes = seconds / 60;
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

const ENDED =
  'Your session has ended (signed out, perhaps in another tab; unused for too long; or its token expired or was revoked). Sign in again.';

/**
 * Puts the page away (`setAway`) once it has made no call for the idle timeout, or the session has reached
 * its lifetime, and then asks whether the session lives: `ended` with the reason when it does not.
 */
function useIdleWatch(
  session: Session | null | undefined,
  away: boolean,
  setAway: (away: boolean) => void,
  ended: (why: string) => void,
): void {
  useEffect(() => {
    if (!session || away) return;
    const idleMs = session.idle_timeout_seconds * 1000;
    const endsAt = Date.parse(session.expires_at);
    // Unused since its last call, or since it was shown (signed in, or back from put away), whichever is later.
    const shownAt = Date.now();
    const check = (): void => {
      const now = Date.now();
      const lifetime = now >= endsAt + GRACE_MS;
      if (!lifetime && now < Math.max(lastUseAt(), shownAt) + idleMs + GRACE_MS) return;
      stop();
      setAway(true);
      currentSession().then(
        (alive) => {
          if (alive) return;
          ended(
            lifetime
              ? 'Your session reached its time limit. Sign in again.'
              : `You were signed out after ${span(session.idle_timeout_seconds)} without use. Sign in again.`,
          );
        },
        // The server did not answer: the page stays put away; going on will say what is wrong.
        () => undefined,
      );
    };
    // Every second, and at once when the tab is shown again (a hidden tab's timers are slowed down).
    const timer = setInterval(check, 1_000);
    document.addEventListener('visibilitychange', check);
    const stop = (): void => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', check);
    };
    return stop;
  }, [session, away]);
}

function App() {
  // undefined: not known yet; null: signed out.
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  // Why the page is at the sign-in, when its session ended under it.
  const [notice, setNotice] = useState<string | undefined>(undefined);
  // Put away after going unused: nothing shown, nothing called, until the person goes on.
  const [away, setAway] = useState(false);
  const route = useRoute();
  const rights = useRights(away ? null : session);
  const { privileges } = rights;
  const may = (...any: string[]) => any.some((p) => privileges.has(p));

  const signedIn = (s: Session | null, why?: string) => {
    useCsrf(s?.csrf);
    watchSession(s ? () => signedIn(null, ENDED) : undefined);
    setNotice(why);
    setAway(false);
    setError(undefined);
    setSession(s);
  };
  useIdleWatch(session, away, setAway, (why) => signedIn(null, why));

  useEffect(() => {
    currentSession().then(
      (s) => signedIn(s),
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

  /** Back from put away: the session as it is now (another tab may have signed in as someone else). */
  async function goOn(): Promise<void> {
    try {
      const s = await currentSession();
      signedIn(s, s ? undefined : ENDED);
    } catch (err) {
      setError(messageOf(err));
    }
  }

  if (session === undefined)
    return (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  if (session === null)
    return (
      <SignIn
        onSignedIn={signedIn}
        notice={notice}
        failure={route.page === 'sign-in-failed' ? route.reason : undefined}
      />
    );
  if (away)
    return (
      <main class="sign-in">
        <h1>Put away</h1>
        <p role="status">
          This page was not used for {span(session.idle_timeout_seconds)}, so it put away what it
          showed.
        </p>
        <Messages error={error} />
        <button type="button" onClick={goOn}>
          Go on
        </button>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </main>
    );
  return (
    <>
      <header class="bar">
        <a class="brand" href="#/">
          Coffer
        </a>
        <span class="who">
          Signed in as {session.is_root ? 'root' : `${session.role} (${session.token_id})`}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav class="sections" aria-label="Sections">
        <a href="#/" aria-current={current(route, 'browse')}>
          Browse
        </a>
        {may('manage_tokens', 'create_tokens', 'list_tokens') && (
          <a href="#/tokens" aria-current={current(route, 'tokens')}>
            Tokens
          </a>
        )}
        {may('manage_roles') && (
          <a href="#/roles" aria-current={current(route, 'roles')}>
            Roles
          </a>
        )}
        {may('manage_webhooks') && (
          <a href="#/webhooks" aria-current={current(route, 'webhooks')}>
            Webhooks
          </a>
        )}
        {may('read_keyring', 'manage_keyring') && (
          <a href="#/keyring" aria-current={current(route, 'keyring')}>
            Keyring
          </a>
        )}
        {may('read_audit') && (
          <a href="#/audit" aria-current={current(route, 'audit', 'seal-report')}>
            Audit log
          </a>
        )}
      </nav>
      <Messages error={error} />
      <main>{page(route, rights)}</main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
