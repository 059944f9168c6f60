/**
 * Sign-in: through the company's identity provider (a plain form to /v1/console/oidc/start: the browser goes
 * to the provider and comes back signed in), or with a token pasted once, which goes to
 * POST /v1/console/sign-in and is forgotten: the form is cleared, the browser keeps only the HttpOnly
 * session cookie the answer sets. A sign-in through the provider that failed comes back here saying why.
 */
import { useState } from 'preact/hooks';
import { api, messageOf, newSessionKey } from './api.js';
import { Messages } from './messages.js';
import type { Session } from './session.js';

/** What a failed sign-in through the provider means, in words. */
function failureText(reason: string): string {
  if (reason.startsWith('choose-role:'))
    return 'Your groups give you several roles in Coffer: choose one below and sign in again.';
  switch (reason) {
    case 'state_mismatch':
      return 'The sign-in came back without this browser’s own request (it took over ten minutes, or began in another browser). Sign in again.';
    case 'provider_refused':
      return 'The identity provider did not sign you in.';
    case 'unknown_role':
    case 'oidc_not_enabled':
      return 'There is no login role by that name for people signing in through an identity provider.';
    case 'redirect_not_allowed':
      return 'This console’s address is not among the login role’s redirect addresses (oidc.redirect_uris).';
    case 'no_group_role':
      return 'Your groups give you no role in Coffer.';
    case 'too_many_requests':
      return 'Too many refused sign-ins from this address: wait a moment and try again.';
    case 'no_session_key':
      return 'The sign-in did not start from this console’s page (it names no key for the session). Sign in from the console.';
    default:
      // The reason comes from the address, which anyone can write into a link: only the server's own
      // reason codes are shown, never other text as if it were the console's.
      return KNOWN_REASONS.has(reason)
        ? `The sign-in was refused (${reason}); the server’s audit log says more.`
        : 'The sign-in was refused; the server’s audit log says why.';
  }
}

/** The other reasons the server sends a failed sign-in back with (docs/identity.md lists them). */
const KNOWN_REASONS = new Set([
  'alg_not_allowed',
  'bad_signature',
  'claim_ambiguous',
  'claim_invalid',
  'claim_mismatch',
  'claim_missing',
  'claim_widens_scope',
  'client_refused',
  'code_refused',
  'expired',
  'id_token_invalid',
  'issued_in_future',
  'issuer_unreachable',
  'malformed',
  'not_yet_valid',
  'role_choice_needed',
  'role_missing',
  'role_not_granted',
  'subject_mismatch',
  'too_large',
  'unknown_kid',
  'wrong_audience',
  'wrong_issuer',
]);

/** Role names as a failed sign-in lists them to choose from: names only, a few. */
const ROLE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export function SignIn({
  onSignedIn,
  notice,
  failure,
}: {
  onSignedIn: (session: Session) => void;
  /** Why the page is here, when a session ended under it. */
  notice: string | undefined;
  failure: string | undefined;
}) {
  const choices = failure?.startsWith('choose-role:')
    ? failure
        .slice('choose-role:'.length)
        .split(', ')
        .filter((name) => ROLE_NAME.test(name))
        .slice(0, 20)
    : [];
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  /**
   * To the provider, by navigation (the CSP's form-action would stop a form whose answer redirects to
   * another origin).
   */
  function toProvider(event: Event): void {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(form)) query.set(name, String(value));
    // The session the provider's sign-in opens takes this page's key: only this page can use it.
    query.set('key', newSessionKey());
    location.assign(`/v1/console/oidc/start?${query}`);
  }

  async function submit(event: Event): Promise<void> {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = form.elements.namedItem('token') as HTMLInputElement;
    const token = field.value.trim();
    field.value = '';
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await api<Session>('POST', '/v1/console/sign-in', { token }));
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="sign-in">
      <h1>Sign in to Coffer</h1>
      {failure && (
        <p class="error" role="alert">
          {failureText(failure)}
        </p>
      )}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={toProvider}>
        <label for="login-role">Login role</label>
        <p class="hint" id="login-role-hint">
          The login role your administrator set up for people (usually oidc).
        </p>
        <input
          id="login-role"
          name="role"
          value="oidc"
          required
          aria-describedby="login-role-hint"
        />
        {choices.length > 0 && (
          <>
            <label for="token-role">Role</label>
            <select id="token-role" name="token_role">
              {choices.map((c) => (
                <option value={c}>{c}</option>
              ))}
            </select>
          </>
        )}
        <button type="submit">Sign in with your identity provider</button>
      </form>
      <h2>Or with a token</h2>
      <form onSubmit={submit}>
        <label for="token">Token</label>
        <p class="hint" id="token-hint">
          Paste a Coffer token. It is sent once to sign in and never kept by this page: the browser
          holds only a session, which ends when you sign out, when it has been unused for a while,
          and after a few hours in any case.
        </p>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          aria-describedby="token-hint"
        />
        <button type="submit" disabled={busy}>
          Sign in with the token
        </button>
        <Messages error={error} />
      </form>
    </main>
  );
}
