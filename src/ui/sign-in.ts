/**
 * Sign-in: a token pasted once. It goes to POST /v1/console/sign-in and is forgotten: the form is cleared,
 * the browser keeps only the HttpOnly session cookie the answer sets.
 */
import { useState } from 'preact/hooks';
import { api, messageOf } from './api.js';
import { html } from './html.js';
import type { Session } from './session.js';

export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

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

  return html`
    <main class="sign-in">
      <h1>Sign in to Coffer</h1>
      <form onSubmit=${submit}>
        <label for="token">Token</label>
        <p class="hint" id="token-hint">
          Paste a Coffer token. It is sent once to sign in and never kept by this page: the browser
          holds only a session, which ends when you sign out, when it has been unused for a while, and
          after a few hours in any case.
        </p>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck=${false}
          required
          aria-describedby="token-hint"
        />
        <button type="submit" disabled=${busy}>Sign in</button>
        ${error && html`<p class="error" role="alert">${error}</p>`}
      </form>
    </main>
  `;
}
