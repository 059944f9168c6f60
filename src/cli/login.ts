/**
 * `coffer login --oidc` and `coffer logout`: a person signs in through the company's OpenID Provider, as
 * `vault login -method=oidc` does. The command listens on a loopback address for the provider's redirect,
 * draws the PKCE verifier, state and nonce and keeps them (the server keeps nothing: auth/oidc-login.ts),
 * opens the provider's address in the browser (or prints it), checks the state that comes back, and lets
 * Coffer trade the code. The token is stored owner-only for the person's later commands (stored-login.ts);
 * `coffer logout` revokes it and removes it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Coffer } from '../client/coffer.js';
import { CofferError } from '../client/errors.js';
import type { CreatedToken } from '../client/index.js';
import { sameText } from '../crypto/constant-time.js';
import { type CommandIo, processIo } from './command-io.js';
import { argumentsError, CliError, EXIT } from './exit-codes.js';
import { durationOption } from './fallback.js';
import { printable } from './printable.js';
import { explain } from './session.js';
import {
  readStoredLogin,
  removeStoredLogin,
  storedLoginPath,
  writeStoredLogin,
} from './stored-login.js';

export const LOGIN_HELP = `usage: coffer login --oidc [--login-role NAME] [--role NAME] [--port N] [--no-browser]

Sign in through your company's identity provider. Coffer's login role NAME (default oidc) names the provider;
your browser opens its sign-in page (with --no-browser, or when none can be opened, open the printed address
yourself), and comes back to this command on http://127.0.0.1:PORT/oidc/callback (any free port unless
--port). Your groups there give your Coffer role; when they give several, choose one with --role.

The token is kept readable by you only in ${'$'}XDG_CONFIG_HOME/coffer/login.json (~/.config/coffer/login.json), for
the server it came from (COFFER_ADDR, default http://127.0.0.1:8750): later commands use it when no
COFFER_TOKEN, COFFER_TOKEN_FILE or JWT login is set. It lasts as long as the login role says.

  --timeout DURATION   how long to wait for the browser to come back (default 5m)
  --json               print the new token's description (never its value) as JSON

examples:
  coffer login --oidc
  coffer login --oidc --login-role people --role admin
`;

export const LOGOUT_HELP = `usage: coffer logout

Revoke the token \`coffer login\` stored, and remove it. Signed out already: nothing to do.

examples:
  coffer logout
  COFFER_ADDR=https://coffer.example.com coffer logout
`;

const DEFAULT_ADDR = 'http://127.0.0.1:8750';
const CALLBACK_PATH = '/oidc/callback';

const random = (): string => randomBytes(32).toString('base64url');

const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/** The page the person's browser shows at the end: no script, nothing from elsewhere. */
function page(res: ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'",
    'referrer-policy': 'no-referrer',
  });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>` +
      `<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`,
  );
}

/** What the provider sent back: its query, once the state matched. */
type Returned = { readonly code: string; readonly iss?: string; readonly res: ServerResponse };

/**
 * Listens for the provider's redirect. A request without the right state (a page in another tab guessing)
 * is answered 400 and waited past; the provider's own error ends the sign-in.
 */
function awaitRedirect(server: Server, state: string, timeoutMs: number): Promise<Returned> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new CliError(
            `the browser did not come back within ${Math.round(timeoutMs / 1000)}s`,
            EXIT.failure,
          ),
        ),
      timeoutMs,
    );
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method !== 'GET' || url.pathname !== CALLBACK_PATH) {
        page(res, 404, 'Not found', 'This address only takes the sign-in coming back.');
        return;
      }
      const query = url.searchParams;
      if (!sameText(query.get('state') ?? '', state)) {
        page(res, 400, 'Not this sign-in', 'This answer is not for the sign-in under way.');
        return;
      }
      clearTimeout(timer);
      const error = query.get('error');
      const code = query.get('code');
      if (error !== null || code === null) {
        const why = error ?? 'no code';
        const description = query.get('error_description');
        page(res, 400, 'Sign-in failed', `The identity provider said: ${why}.`);
        reject(
          new CliError(
            `the identity provider refused the sign-in: ${printable(why)}${description ? ` (${printable(description)})` : ''}`,
            EXIT.denied,
          ),
        );
        return;
      }
      const iss = query.get('iss');
      resolve({ code, ...(iss === null ? {} : { iss }), res });
    });
  });
}

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: false,
      options: {
        oidc: { type: 'boolean' },
        'login-role': { type: 'string' },
        role: { type: 'string' },
        port: { type: 'string' },
        'no-browser': { type: 'boolean' },
        timeout: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    throw argumentsError(err);
  }
}

export async function loginCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  const o = parse(args);
  if (o.help) {
    io.write(LOGIN_HELP);
    return EXIT.ok;
  }
  if (!o.oidc) throw new CliError('say how to sign in: coffer login --oidc', EXIT.usage);
  const loginRole = o['login-role'] ?? 'oidc';
  const port = o.port === undefined ? 0 : Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliError(`--port ${o.port}: a port number`, EXIT.usage);
  const timeoutMs = o.timeout === undefined ? 300_000 : durationOption(o.timeout, '--timeout');
  const addr = io.env.COFFER_ADDR || DEFAULT_ADDR;
  let coffer: Coffer;
  try {
    // No token is needed to sign in, and none of the environment's is sent.
    coffer = new Coffer({ url: addr, token: '' }, {});
  } catch (err) {
    // A problem with the token or JWT settings says so itself; anything else is the address's.
    const setting = (err as { setting?: string }).setting;
    throw new CliError(
      setting ? (err as Error).message : `COFFER_ADDR: ${(err as Error).message}`,
      EXIT.usage,
    );
  }

  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          `cannot listen on 127.0.0.1:${port} for the sign-in to come back: ${err.code ?? err.message}`,
          EXIT.failure,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', resolve);
  });
  try {
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}${CALLBACK_PATH}`;
    const verifier = random();
    const state = random();
    const nonce = random();
    let authUrl: string;
    try {
      ({ auth_url: authUrl } = await coffer.oidcStart({
        role: loginRole,
        redirect_uri: redirectUri,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        state,
        nonce,
      }));
    } catch (err) {
      throw refused(err, coffer, loginRole);
    }
    const opened = !o['no-browser'] && io.openBrowser(authUrl);
    io.tell(
      `${opened ? 'Your browser has been opened to sign in. If it did not open, go to' : 'To sign in, open this address in your browser'}:\n\n  ${authUrl}\n\nWaiting for the sign-in to come back…\n`,
    );
    const returned = await awaitRedirect(server, state, timeoutMs);
    let created: CreatedToken;
    try {
      created = await coffer.oidcCallback({
        role: loginRole,
        redirect_uri: redirectUri,
        code: returned.code,
        state,
        ...(returned.iss === undefined ? {} : { iss: returned.iss }),
        code_verifier: verifier,
        nonce,
        ...(o.role === undefined ? {} : { token_role: o.role }),
      });
    } catch (err) {
      const failure = refused(err, coffer, loginRole);
      page(returned.res, 400, 'Sign-in failed', `${failure.message}. You may close this window.`);
      throw failure;
    }
    page(
      returned.res,
      200,
      'Signed in to Coffer',
      'You may close this window and go back to the terminal.',
    );
    const path = writeStoredLogin(io.env, {
      addr: coffer.url,
      token: created.token,
      token_id: created.id,
      expires_at: created.expires_at,
      login_role: loginRole,
      ...(created.login?.subject === undefined ? {} : { subject: created.login.subject }),
      role: created.role,
    });
    const { token: _shownOnce, ...described } = created;
    if (o.json) io.write(`${JSON.stringify(described, null, 2)}\n`);
    io.tell(
      `Signed in as ${created.login?.subject ?? created.id}${created.role ? ` with role ${created.role}` : ''}, until ${created.expires_at ?? 'revoked'}; the token is kept in ${path}\n`,
    );
    return EXIT.ok;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

/** A refused step, said in the person's terms. */
function refused(err: unknown, coffer: Coffer, loginRole: string): CliError {
  if (err instanceof CofferError && err.status === 400 && err.errors?.[0]?.field === '/token_role')
    return new CliError(
      `${err.detail}: ${err.errors[0].message} — sign in again with --role NAME`,
      EXIT.usage,
    );
  if (err instanceof CofferError && err.status === 401)
    return new CliError(
      `the sign-in through login role "${loginRole}" was refused (401); the server's audit log says why. Is "${loginRole}" a login role with oidc (--login-role NAME)? --role chooses among the roles your groups give`,
      EXIT.denied,
    );
  const explained = explain(err, coffer, `login role ${loginRole}`);
  return explained instanceof CliError ? explained : new CliError(String(explained));
}

export async function logoutCommand(args: string[], io: CommandIo = processIo()): Promise<number> {
  let help = false;
  try {
    help =
      parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } } }).values.help ?? false;
  } catch (err) {
    throw argumentsError(err);
  }
  if (help) {
    io.write(LOGOUT_HELP);
    return EXIT.ok;
  }
  const stored = readStoredLogin(io.env);
  if (!stored) {
    io.tell('Not signed in: nothing to do.\n');
    return EXIT.ok;
  }
  const coffer = new Coffer({ url: stored.addr, token: stored.token }, {});
  try {
    await coffer.revokeSelf();
  } catch (err) {
    // Refused: it was revoked or has expired already. Anything else: keep it, so logout can be tried again.
    if (!(err instanceof CofferError && err.status === 401))
      throw explain(err, coffer, 'the stored sign-in');
  }
  removeStoredLogin(io.env);
  io.tell(
    `Signed out of ${stored.addr}: the token is revoked and ${storedLoginPath(io.env)} removed.\n`,
  );
  return EXIT.ok;
}
