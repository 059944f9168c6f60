import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { AUDIT_FILTER_NAMES, AUDIT_FILTERS } from '../../src/model/audit-filters.js';
import { snapshotName } from '../../src/operator/scheduled-snapshots.js';
import { LAPTOP, launchChromium, PHONE, signInWithToken, watchedPage } from '../support/browser.js';
import { startTestCoffer, type TestCoffer, tempDir } from '../support/harness.js';
import { putPeopleLoginRole, TestOidcProvider } from '../support/oidc-provider.js';
import { requirePackage } from '../support/system-packages.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const SECRET = 'pg-password-9f3a71c2';
const CONFIG = 'https://payments.internal:8443';

/** Where screenshots go when COFFER_TEST_SCREENSHOTS names a folder (docs/console.md shows them). */
const SHOTS = process.env.COFFER_TEST_SCREENSHOTS;

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it is now. */
async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate(() =>
    (
      globalThis as unknown as {
        axe: { run: () => Promise<{ violations: { id: string; impact: string; help: string }[] }> };
      }
    ).axe.run(),
  )) as { violations: { id: string; impact: string; help: string; nodes: unknown[] }[] };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}`);
}

describe('the web console in Chromium', function () {
  this.timeout(90_000);
  let c: TestCoffer;
  let browser: Browser;
  let admin: string;
  let writer: string;
  let configReader: string;

  before(async function () {
    requirePackage(this, 'chromium');
    c = await startTestCoffer();
    admin = await c.token({ role: 'admin' });
    writer = await c.token({ role: 'writer' });
    configReader = await c.token({ role: 'config-reader' });
    await c.put('payments/prod/db_password', SECRET, 'secret');
    await c.put('payments/prod/api_url', CONFIG, 'config');
    await c.put('payments/staging/db_password', 'staging-secret', 'secret');
    // More keys than a page (50): the search finds what the first page does not hold.
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        c.put(`bulk/k${String(i).padStart(2, '0')}`, 'v', 'config'),
      ),
    );
    await c.put('bulk/zeta', 'v', 'config');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('signs in with a token, browses, reveals, adds a version, deletes, restores, destroys and signs out, under its CSP without an error', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page, errors } = await watchedPage(context);
    const main = await page.goto(`${c.url}/ui/`);
    expect(main!.headers()['content-security-policy']).to.include("script-src 'self'");
    await signInWithToken(page, c.url, admin);
    // The token is in no storage the page's script can reach, and the cookie is HttpOnly.
    const cookies = await context.cookies();
    expect(cookies.map((k) => [k.name, k.httpOnly, k.sameSite])).to.deep.equal([
      ['coffer_session', true, 'Strict'],
    ]);
    expect(cookies[0]!.value).to.not.include(admin);
    const storage = await page.evaluate(() =>
      JSON.stringify({ ...localStorage, ...sessionStorage }),
    );
    expect(storage).to.not.include(admin);
    expect(await page.evaluate(() => document.cookie)).to.equal('');
    // An admin may create tokens but not list roles: it is offered the built-in ones.
    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByRole('option', { name: 'reader', exact: true }).waitFor({ state: 'attached' });
    await page.getByRole('link', { name: 'Browse' }).click();

    // The namespaces are a tree that opens in place, down to the keys.
    await page.getByRole('button', { name: 'Open payments in the tree' }).click();
    await page.getByRole('button', { name: 'Open payments/prod in the tree' }).click();
    await page.getByRole('link', { name: 'db_password' }).waitFor();
    expect(
      await page
        .getByRole('button', { name: 'Close payments in the tree' })
        .getAttribute('aria-expanded'),
    ).to.equal('true');
    await page.getByRole('button', { name: 'Close payments in the tree' }).click();
    expect(await page.getByRole('link', { name: 'db_password' }).count()).to.equal(0);

    await page.getByRole('link', { name: 'payments/' }).click();
    await page.getByRole('link', { name: 'prod/' }).click();
    const rows = page.locator('table.keys tbody tr');
    await rows.first().waitFor();
    const cells = async (i: number) =>
      (await rows.nth(i).locator('td').allInnerTexts()).slice(0, 3);
    expect([await cells(0), await cells(1)]).to.deep.equal([
      ['api_url', 'config', '1'],
      ['db_password', 'secret', '1'],
    ]);
    const search = page.getByLabel('Search by name prefix');
    await search.fill('db');
    await page.getByText('No keys here').or(rows.nth(1)).waitFor({ state: 'detached' });
    expect(await rows.allInnerTexts()).to.have.length(1);
    await search.fill('db/');
    await page.getByText('Names hold only').waitFor();
    await search.fill('');

    // The search asks the server: a key past the first page is found.
    await page.getByRole('link', { name: 'All namespaces' }).click();
    // A page of 50 keys, each with its type, version and time, is one call (and one audit entry).
    const calls: string[] = [];
    const onRequest = (request: { url(): string }) => {
      const { pathname, search } = new URL(request.url());
      if (pathname.startsWith('/v1/kv/')) calls.push(`${pathname}${search}`);
    };
    page.on('request', onRequest);
    await page.getByRole('link', { name: 'bulk/' }).click();
    await page.getByRole('button', { name: 'Show more' }).waitFor();
    expect(await rows.count()).to.equal(50);
    page.off('request', onRequest);
    expect(calls).to.deep.equal(['/v1/kv/bulk?list=true&details=true&limit=50']);
    expect(await cells(0)).to.deep.equal(['k00', 'config', '1']);
    await search.fill('ze');
    await page.getByRole('link', { name: 'zeta' }).waitFor();
    expect(await rows.count()).to.equal(1);
    expect(await page.getByRole('button', { name: 'Show more' }).count()).to.equal(0);
    await page.goBack();
    await page.goBack();

    await page.getByRole('link', { name: 'db_password' }).click();
    await page.getByRole('heading', { name: 'Versions' }).waitFor();
    // The value is nowhere in the page until it is revealed.
    expect(await page.content()).to.not.include(SECRET);
    await page.getByRole('button', { name: 'Reveal version 1' }).click();
    await page.getByText(SECRET).waitFor();
    const reads = await c.call('GET', '/v1/sys/audit?action=read&key=payments/prod/db_password');
    expect(
      reads.body.entries.some(
        (e: { via?: string; version?: number }) => e.via === 'console' && e.version === 1,
      ),
    ).to.equal(true);

    // A new version starts at the latest version's type: saving without looking never changes it.
    expect(await page.getByLabel('Type').inputValue()).to.equal('secret');
    await page.getByLabel('New value').fill('rotated-password');
    await page.getByRole('button', { name: 'Save a new version' }).click();
    await page.getByText('Version 2 saved.').waitFor();
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password')).body.value).to.equal(
      'rotated-password',
    );

    // An older version alone: deleted (absent until restored), restored; its destroy asks first.
    await page.getByRole('button', { name: 'Delete version 1', exact: true }).click();
    await page.getByText('Deleted version 1: it reads as absent until restored.').waitFor();
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password?version=1')).status).to.equal(
      404,
    );
    await page.getByRole('button', { name: 'Restore version 1' }).click();
    await page.getByText('Restored version 1.').waitFor();
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password?version=1')).status).to.equal(
      200,
    );
    await page.getByRole('button', { name: 'Destroy version 1…' }).click();
    await page.getByText('Erase version 1 for good?').waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('button', { name: 'Delete version 2' }).count()).to.equal(0);

    // Delete puts the key in the trash: restored from there, or destroyed behind its own confirmation.
    await page.getByRole('button', { name: 'Delete this key…' }).click();
    await page.getByText('Delete db_password from payments/prod? It will read as absent').waitFor();
    await page.getByRole('button', { name: 'Delete db_password' }).click();
    await page.getByText('Deleted db_password: it reads as absent now.').waitFor();
    await page.getByText(/^Deleted .*: in the trash/).waitFor();
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password')).status).to.equal(404);
    expect(await page.getByRole('button', { name: 'Reveal version 1' }).count()).to.equal(1);
    await page.getByRole('button', { name: 'Restore db_password' }).click();
    await page.getByText('Restored db_password, as it was.').waitFor();
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password')).body.value).to.equal(
      'rotated-password',
    );
    // The namespace's trash lists it; its link leads back to the key page.
    await page.getByRole('button', { name: 'Delete this key…' }).click();
    await page.getByRole('button', { name: 'Delete db_password' }).click();
    await page.getByText('Deleted db_password: it reads as absent now.').waitFor();
    await page.getByRole('link', { name: 'payments/prod' }).first().click();
    await page.getByRole('button', { name: 'Show deleted keys' }).click();
    await page.locator('table.trash').getByRole('link', { name: 'db_password' }).click();
    await page.getByText(/^Deleted .*: in the trash/).waitFor();
    await page.getByRole('button', { name: 'Destroy for good…' }).click();
    await page.getByText('erase every one of its versions for good?').waitFor();
    await page.getByRole('button', { name: 'Destroy db_password' }).click();
    await page.getByText('Destroyed db_password in payments/prod').waitFor();
    expect((await c.call('GET', '/v1/kv/payments/prod/db_password?version=1')).status).to.equal(
      404,
    );

    await page.getByRole('link', { name: 'Back to payments/prod' }).click();
    await page.getByRole('link', { name: 'api_url' }).click();
    await page.getByRole('button', { name: 'Reveal version 1' }).waitFor();
    expect(await page.getByLabel('Type').inputValue()).to.equal('config');
    // At phone width the versions table's button and type stay whole words (one line each).
    await page.setViewportSize(PHONE);
    const lines = (element: Element) => {
      const range = document.createRange();
      range.selectNodeContents(element);
      return range.getClientRects().length;
    };
    expect(await page.getByRole('button', { name: 'Reveal version 1' }).evaluate(lines)).to.equal(
      1,
    );
    expect(await page.locator('table.versions td').nth(1).evaluate(lines)).to.equal(1);
    await page.setViewportSize(LAPTOP);

    const session = cookies[0]!.value;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    const after = await c.call('GET', '/v1/auth/me', {
      token: null,
      headers: { cookie: `coffer_session=${session}` },
    });
    expect(after.status).to.equal(401);
    expect(errors).to.deep.equal([]);
    await context.close();
  });

  it('shows a config-reader no secret value and no control it may not use, and refuses an inline script', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page } = await watchedPage(context);
    await signInWithToken(page, c.url, configReader);
    await page.goto(`${c.url}/ui/#/key/db_password/in/payments/staging`);
    // Offered only what it may do: a secret it may not read has no Reveal (its versions may not even be
    // listed to it: then the page says why); it may not write or delete.
    await Promise.race([
      page.getByText('not readable with this session').first().waitFor(),
      page.getByRole('alert').waitFor(),
    ]);
    expect(await page.getByRole('button', { name: /^Reveal/ }).count()).to.equal(0);
    expect(await page.getByRole('button', { name: 'Save a new version' }).count()).to.equal(0);
    expect(await page.getByRole('button', { name: /Delete this key/ }).count()).to.equal(0);
    await page.goto(`${c.url}/ui/#/ns/payments/prod`);
    await page.getByRole('link', { name: 'api_url' }).waitFor();
    expect(await page.getByRole('button', { name: 'New key…' }).count()).to.equal(0);
    expect(await page.content()).to.not.include('staging-secret');
    // The CSP refuses script the page did not load from its own origin.
    const ran = await page
      .addScriptTag({ content: 'window.injected = true' })
      .then(() => page.evaluate(() => (window as unknown as { injected?: boolean }).injected))
      .catch(() => false);
    expect(ran ?? false).to.equal(false);
    await context.close();
  });

  it('takes no name from its address that the API would refuse: a crafted key link reaches no other endpoint, and a sign-in failure shows only its own words', async () => {
    const role = await c.call('PUT', '/v1/sys/login-roles/victim-login', {
      json: {
        issuer: 'https://issuer.example',
        jwks_url: 'https://issuer.example/keys',
        bound_audiences: ['coffer'],
        role: 'reader',
      },
    });
    expect(role.status, role.text).to.be.oneOf([200, 201]);
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page } = await watchedPage(context);
    await signInWithToken(page, c.url, c.rootToken);
    const calls: string[] = [];
    page.on('request', (request) =>
      calls.push(`${request.method()} ${new URL(request.url()).pathname}`),
    );
    // The outside tester's link: the key page of a "namespace" that climbs out of /v1/kv.
    await page.goto(`${c.url}/ui/#/key/victim-login/in/../../v1/sys/login-roles`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    const remove = page.getByRole('button', { name: /Delete this key/ });
    if (await remove.isVisible()) {
      await remove.click();
      const confirm = page.getByRole('button', { name: /^Delete/ }).last();
      if (await confirm.isVisible()) await confirm.click();
    }
    await page.waitForTimeout(300);
    expect(calls.filter((call) => call.includes('/v1/sys/login-roles'))).to.deep.equal([]);
    expect(calls.filter((call) => call.startsWith('DELETE'))).to.deep.equal([]);
    expect((await c.call('GET', '/v1/sys/login-roles/victim-login')).status).to.equal(200);

    // A sign-in failure link carries any text: only the console's own words are shown. (Once signed out:
    // a sign-out still finishing would put the sign-in page over the one the link opens.)
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    await page.goto(
      `${c.url}/ui/#/sign-in-failed/${encodeURIComponent('Your account is locked: call +1-555-0100 and read out your token')}`,
    );
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).to.not.include('555-0100');
    expect(await alert.textContent()).to.include('The sign-in was refused');
    await context.close();
  });

  it('sends no session cookie with a cross-site form, which is refused', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page } = await watchedPage(context);
    await signInWithToken(page, c.url, writer);
    // Another site (localhost is not 127.0.0.1's site) posts a form to Coffer.
    const port = new URL(c.url).port;
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form id="f" method="post" action="http://127.0.0.1:${port}/v1/auth/token"><input name="role" value="admin"></form>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/v1/auth/token')),
        page.evaluate(() => (document.getElementById('f') as HTMLFormElement).submit()),
      ]);
      expect(answer.status()).to.equal(401);
    } finally {
      evil.close();
      await context.close();
    }
  });

  it('is used from the keyboard alone, the control in focus always outlined', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page, errors } = await watchedPage(context);
    await page.goto(`${c.url}/ui/`);
    // Tab until `target` has the focus, and check that it shows: an outline of at least 2 px.
    const tabTo = async (target: Locator): Promise<void> => {
      await target.waitFor();
      for (let presses = 0; presses < 60; presses++) {
        await page.keyboard.press('Tab');
        const seen = await target.evaluate((el) => {
          if (el !== document.activeElement) return undefined;
          const style = getComputedStyle(el);
          return { style: style.outlineStyle, width: Number.parseFloat(style.outlineWidth) };
        });
        if (seen) {
          expect(seen.style).to.not.equal('none');
          expect(seen.width).to.be.at.least(2);
          return;
        }
      }
      throw new Error(`Tab never reached ${target}`);
    };

    await tabTo(page.getByLabel('Token'));
    await page.keyboard.type(writer);
    await page.keyboard.press('Enter');
    await tabTo(page.getByRole('link', { name: 'payments/' }));
    await page.keyboard.press('Enter');
    await tabTo(page.getByRole('link', { name: 'staging/' }));
    await page.keyboard.press('Enter');
    await tabTo(page.getByRole('link', { name: 'db_password' }));
    await page.keyboard.press('Enter');
    await tabTo(page.getByRole('button', { name: 'Reveal version 1' }));
    await page.keyboard.press('Enter');
    await page.getByText('staging-secret').waitFor();
    await tabTo(page.getByRole('button', { name: 'Sign out' }));
    await page.keyboard.press('Enter');
    await page.getByLabel('Token').waitFor();
    expect(errors).to.deep.equal([]);
    await context.close();
  });

  it('makes a new key from a browse page, never over one that exists, and adds a version only on top of the latest shown', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page, errors } = await watchedPage(context);
    await signInWithToken(page, c.url, writer);
    await page.getByLabel('Search by name prefix').fill('zzz');
    await page.getByText('No namespaces starting with “zzz” that you may list.').waitFor();

    await page.getByRole('button', { name: 'New key…' }).click();
    await page.getByLabel('Namespace', { exact: true }).fill('team/new');
    await page.getByLabel('Key', { exact: true }).fill('api_token');
    await page.getByLabel('Value').fill('tok-5f2a');
    expect(await page.getByLabel('Type').inputValue(), 'a secret unless chosen').to.equal('secret');
    await page.getByRole('button', { name: 'Save the key' }).click();
    await page.getByRole('heading', { name: 'api_token' }).waitFor();
    const made = await c.call('GET', '/v1/kv/team/new/api_token');
    expect([made.body.version, made.body.type, made.body.value]).to.deep.equal([
      1,
      'secret',
      'tok-5f2a',
    ]);

    // The same name again: refused, and nothing changed.
    await page.getByRole('link', { name: 'team/new' }).click();
    await page.getByRole('button', { name: 'New key…' }).click();
    expect(await page.getByLabel('Namespace', { exact: true }).inputValue()).to.equal('team/new');
    await page.getByLabel('Value').fill('not-over-it');
    // A name the API would refuse is refused before asking.
    await page.getByLabel('Key', { exact: true }).fill('bad name');
    await page.getByRole('button', { name: 'Save the key' }).click();
    await page.getByText('The key: Names hold only').waitFor();
    await page.getByLabel('Key', { exact: true }).fill('api_token');
    await page.getByRole('button', { name: 'Save the key' }).click();
    await page.getByText('api_token already exists in team/new: nothing was changed.').waitFor();
    expect((await c.call('GET', '/v1/kv/team/new/api_token')).body.version).to.equal(1);

    // Another person's version saved meanwhile is not superseded unseen.
    await page.getByRole('link', { name: 'Open api_token' }).click();
    await page.getByRole('button', { name: 'Reveal version 1' }).waitFor();
    await c.put('team/new/api_token', 'their-token', 'secret');
    await page.getByLabel('New value').fill('my-token');
    await page.getByRole('button', { name: 'Save a new version' }).click();
    await page.getByText('Another version was saved meanwhile, so yours was not').waitFor();
    await page.getByRole('button', { name: 'Reveal version 2' }).waitFor();
    expect((await c.call('GET', '/v1/kv/team/new/api_token')).body.value).to.equal('their-token');
    await page.getByRole('button', { name: 'Save a new version' }).click();
    await page.getByText('Version 3 saved.').waitFor();
    expect((await c.call('GET', '/v1/kv/team/new/api_token')).body.value).to.equal('my-token');
    // The two refusals (412) are failed loads, which Chromium reports as console errors; nothing else.
    expect(errors.filter((e) => !e.includes('412'))).to.deep.equal([]);
    await context.close();
  });

  it('has no serious or critical accessibility violation on any screen, at laptop and phone width', async () => {
    for (const [width, viewport] of [
      ['laptop', LAPTOP],
      ['phone', PHONE],
    ] as const) {
      // axe is injected through the DevTools protocol's evaluate, which the CSP does not govern.
      const context = await browser.newContext({ viewport });
      const { page, errors } = await watchedPage(context);
      await page.goto(`${c.url}/ui/`);
      await page.getByLabel('Token').waitFor();
      const screens: [string, string[]][] = [['sign-in', await accessibilityViolations(page)]];
      if (SHOTS) await page.screenshot({ path: `${SHOTS}/sign-in-${width}.png`, fullPage: true });
      // An admin: every control of the key page is there (a writer may not delete).
      await signInWithToken(page, c.url, admin);
      await page.getByRole('link', { name: 'payments/' }).waitFor();
      // The tree opened two levels down.
      await page.getByRole('button', { name: 'Open payments in the tree' }).click();
      await page.getByRole('button', { name: 'Open payments/prod in the tree' }).click();
      await page.getByRole('link', { name: 'api_url' }).waitFor();
      screens.push(['namespaces', await accessibilityViolations(page)]);
      if (SHOTS)
        await page.screenshot({ path: `${SHOTS}/namespaces-${width}.png`, fullPage: true });
      await page.goto(`${c.url}/ui/#/ns/payments/prod`);
      await page.locator('table.keys tbody tr').first().waitFor();
      await page.getByRole('button', { name: 'New key…' }).click();
      await page.getByRole('heading', { name: 'New key' }).waitFor();
      screens.push(['keys', await accessibilityViolations(page)]);
      if (SHOTS) await page.screenshot({ path: `${SHOTS}/keys-${width}.png`, fullPage: true });
      await page.getByRole('link', { name: 'api_url' }).click();
      await page.getByRole('button', { name: 'Reveal version 1' }).click();
      await page.getByText(CONFIG).waitFor();
      await page.getByRole('button', { name: 'Delete this key…' }).click();
      screens.push(['key', await accessibilityViolations(page)]);
      if (SHOTS) await page.screenshot({ path: `${SHOTS}/key-${width}.png`, fullPage: true });
      for (const [screen, violations] of screens)
        expect(violations, `${screen} at ${width} width`).to.deep.equal([]);
      expect(errors).to.deep.equal([]);
      await context.close();
    }
  });
});

describe('the web console signed in through an OpenID Provider, in Chromium', function () {
  this.timeout(90_000);
  let c: TestCoffer;
  let idp: TestOidcProvider;
  let browser: Browser;

  before(async function () {
    requirePackage(this, 'chromium');
    idp = await TestOidcProvider.start();
    idp.addAccount('alice', { groups: ['payments-team'] });
    idp.addAccount('bob', { groups: ['payments-team', 'coffer-admins'] });
    c = await startTestCoffer();
    await putPeopleLoginRole(c, idp, 'oidc');
    await c.put('payments/prod/api_url', CONFIG, 'config');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await c?.close();
    await idp?.close();
  });

  /** Goes through the provider's own pages (sign-in with any password, consent) until it sends the browser back. */
  async function atProvider(page: Page, sub: string): Promise<void> {
    await page.waitForURL(`${idp.url}/**`, { waitUntil: 'commit' });
    for (let step = 0; step < 4 && page.url().startsWith(idp.url); step++) {
      const submit = page.locator('button[type="submit"]');
      await submit.waitFor();
      const login = page.locator('input[name="login"]');
      if ((await login.count()) > 0) {
        await login.fill(sub);
        await page.locator('input[name="password"]').fill('any');
      }
      const at = page.url();
      await submit.click();
      await page.waitForURL((url) => url.href !== at, { waitUntil: 'commit' });
    }
  }

  it('signs in through the provider with PKCE, the groups giving the role; sign-out revokes the token', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page, errors } = await watchedPage(context);
    await page.goto(`${c.url}/ui/`);
    await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
    await atProvider(page, 'alice');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByText('Signed in as payments-reader').count()).to.equal(1);
    await page.getByRole('link', { name: 'payments/' }).click();
    await page.getByRole('link', { name: 'prod/' }).click();
    await page.getByRole('link', { name: 'api_url' }).waitFor();
    const tokens = await c.call('GET', '/v1/auth/tokens');
    const mine = tokens.body.tokens.find(
      (t: { login?: { subject: string } }) => t.login?.subject === 'alice',
    );
    expect(mine).to.include({ role: 'payments-reader', status: 'active' });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    const after = await c.call('GET', '/v1/auth/tokens?all=true');
    expect(after.body.tokens.find((t: { id: string }) => t.id === mine.id).status).to.equal(
      'revoked',
    );
    // Coffer's pages raise no console error (the provider's own pages are not Coffer's).
    expect(errors.filter((e) => e.startsWith(c.url))).to.deep.equal([]);
    await context.close();
  });

  it('asks a person whose groups give several roles to choose, and refuses a callback that is not this browser’s', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page } = await watchedPage(context);
    await page.goto(`${c.url}/ui/`);
    await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
    await atProvider(page, 'bob');
    await page.getByText('Your groups give you several roles in Coffer').waitFor();
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
    await atProvider(page, 'bob');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByText('Signed in as admin').count()).to.equal(1);

    // A callback forged into another browser: no pending sign-in of its own, so no session.
    const other = await browser.newContext();
    const { page: victim } = await watchedPage(other);
    await victim.goto(`${c.url}/v1/console/oidc/callback?code=stolen&state=${'A'.repeat(43)}`);
    await victim.getByText('without this browser’s own request').waitFor();
    expect(await other.cookies()).to.deep.equal([]);
    await other.close();
    await context.close();
  });
});

describe('the web console’s tokens, roles, keyring and audit screens, in Chromium', function () {
  this.timeout(120_000);
  let c: TestCoffer;
  let browser: Browser;
  let auditor: string;
  let snapshot: string;

  before(async function () {
    requirePackage(this, 'chromium');
    // Scheduled snapshots: the keyring screen lists what the directory holds (a file named as one is).
    const snapshots = join(tempDir(), 'snapshots');
    mkdirSync(snapshots);
    snapshot = snapshotName(Date.UTC(2026, 10, 24, 18));
    writeFileSync(join(snapshots, snapshot), Buffer.alloc(3 * 1024));
    c = await startTestCoffer({
      env: {
        COFFER_SNAPSHOT_DIR: snapshots,
        COFFER_SNAPSHOT_EVERY: '6h',
        // The webhook screen's test sends to a receiver on loopback.
        COFFER_WEBHOOKS_ALLOW_PRIVATE: 'true',
      },
    });
    auditor = await c.token({ role: 'auditor', metadata: { name: 'the-auditor' } });
    for (let i = 0; i < 30; i++) await c.put(`payments/prod/key_${i}`, `value-${i}`, 'secret');
    await c.call('PUT', '/v1/sys/roles/payments-reader', {
      json: {
        rules: [{ namespaces: ['payments/*'], actions: ['read', 'list'], types: ['config'] }],
      },
    });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await c?.close();
  });

  /**
   * The screen's serious and critical axe findings at laptop and phone width, and its screenshots (a token
   * shown once is masked: no token goes into the repository, not even a test's).
   */
  async function check(page: Page, screen: string): Promise<void> {
    for (const [width, viewport] of [
      ['phone', PHONE],
      ['laptop', LAPTOP],
    ] as const) {
      await page.setViewportSize(viewport);
      if (SHOTS)
        await page.screenshot({
          path: `${SHOTS}/${screen}-${width}.png`,
          fullPage: true,
          mask: [
            page.getByLabel('The new token').locator('pre'),
            page.locator('.secret-once code'),
          ],
        });
      expect(await accessibilityViolations(page), `${screen} at ${width} width`).to.deep.equal([]);
    }
  }

  it('root creates a token shown once and revokes it, edits a role, and rotates and rewraps the keyring, live', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page, errors } = await watchedPage(context);
    await signInWithToken(page, c.url, c.rootToken);

    await page.getByRole('link', { name: 'Tokens' }).click();
    await page.getByLabel('Role', { exact: true }).selectOption('reader');
    await page.getByLabel('Name').fill('payments-api');
    await page.getByRole('button', { name: 'Create the token' }).click();
    const shown = page.getByLabel('The new token').locator('pre');
    await shown.waitFor();
    const token = (await shown.textContent())!;
    expect((await c.call('GET', '/v1/auth/me', { token })).body.role).to.equal('reader');
    await check(page, 'tokens');
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.content()).to.not.include(token);
    const id = token.split('_')[1]!;
    await page.getByRole('button', { name: `Revoke ${id}…` }).click();
    await page.getByRole('button', { name: `Revoke ${id}`, exact: true }).click();
    await page.getByText(`Revoked ${id}`).waitFor();
    expect((await c.call('GET', '/v1/auth/me', { token })).status).to.equal(401);

    await page.getByRole('link', { name: 'Roles' }).click();
    // The built-in roles say what they allow, not only their privileges.
    await page.getByRole('cell', { name: '*: read, list (config)' }).first().waitFor();
    // A save the server refuses keeps what was written, the refusal beside it.
    await page.getByRole('button', { name: 'New role…' }).click();
    await page.getByLabel('Name', { exact: true }).fill('half-done');
    const written = JSON.stringify({
      rules: [{ namespaces: ['x'], actions: ['fly'], types: ['config'] }],
    });
    await page.getByLabel(/As JSON/).fill(written);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/^Not saved: /).waitFor();
    expect(await page.getByLabel(/As JSON/).inputValue()).to.equal(written);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Edit payments-reader' }).click();
    await page.getByLabel(/As JSON/).fill(
      JSON.stringify({
        rules: [
          { namespaces: ['payments/*'], actions: ['read', 'list'], types: ['config', 'secret'] },
        ],
      }),
    );
    await check(page, 'roles');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved payments-reader').waitFor();
    const role = await c.call('GET', '/v1/sys/roles/payments-reader');
    expect(role.body.rules[0].types).to.deep.equal(['config', 'secret']);

    await page.getByRole('link', { name: 'Keyring' }).click();
    await page.getByRole('button', { name: 'Rotate…' }).click();
    await page.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByText('Rotated: version 2 is active (was 1).').waitFor();
    await page.getByRole('button', { name: 'Start rewrap…' }).click();
    await page.getByRole('button', { name: 'Start rewrap', exact: true }).click();
    // The progress is followed live until the rewrap says it finished.
    await page.getByText(/The last rewrap finished at .*: 30 rewrapped, 0 failed/).waitFor();
    // The scheduled snapshots, and a few of the server's metrics (root may read them).
    await page.getByText('One every 6h, the newest 7 kept').waitFor();
    await page.getByRole('cell', { name: snapshot }).waitFor();
    await page.getByRole('cell', { name: '3.0 KiB' }).waitFor();
    const figures = page.getByRole('definition');
    await page.getByRole('heading', { name: 'Server' }).waitFor();
    await page.getByText('Storage write, mean').waitFor();
    expect(await figures.allTextContents()).to.satisfy((all: string[]) =>
      all.some((t) => /^\d+(\.\d+)? ms$/.test(t)),
    );
    // Read again on request only (a timer would keep an unattended session alive).
    const answered = async () => Number.parseInt((await figures.first().textContent())!, 10);
    const before = await answered();
    await page.getByRole('button', { name: 'Refresh the figures' }).click();
    await page.waitForFunction(
      (n) => Number.parseInt(document.querySelector('.figures dd')!.textContent!, 10) > n,
      before,
    );
    await check(page, 'keyring');
    const keyring = await c.call('GET', '/v1/sys/keyring');
    expect(
      keyring.body.versions.find((v: { version: number }) => v.version === 1).secrets,
    ).to.equal(0);
    // The one refusal (the role save, 400) is a failed load, which Chromium reports; nothing else.
    expect(errors.filter((e) => e.startsWith(c.url) && !e.includes('status of 400'))).to.deep.equal(
      [],
    );
    expect(errors.filter((e) => e.includes('pattern'))).to.deep.equal([]);
    await context.close();
  });

  it('root adds a webhook, keeps its secret shown once, tests it against a receiver, rotates the secret and deletes it', async () => {
    const receiver = await startWebhookReceiver();
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page, errors } = await watchedPage(context);
    page.on('dialog', (dialog) => void dialog.accept());
    try {
      await signInWithToken(page, c.url, c.rootToken);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('button', { name: 'New webhook…' }).click();
      await page.getByLabel('Name', { exact: true }).fill('deploys');
      await page.getByLabel(/^URL/).fill(receiver.url);
      await page.getByLabel(/^Namespaces/).fill('payments/*');
      await page.getByRole('button', { name: 'Save' }).click();
      const shown = page.locator('.secret-once code');
      await shown.waitFor();
      const secret = (await shown.textContent())!;
      expect(secret).to.match(/^whsec_/);
      await page.getByRole('cell', { name: 'payments/*' }).waitFor();
      await check(page, 'webhooks');
      await page.getByRole('button', { name: 'I have kept it' }).click();
      expect(await page.content()).to.not.include(secret);

      await page.getByRole('button', { name: 'Test deploys' }).click();
      await page.getByText(/the receiver took the test message/).waitFor();
      const wh = new Webhook(secret);
      const [message] = receiver.received;
      expect(wh.verify(message!.body, message!.headers as Record<string, string>)).to.include({
        type: 'webhook.test',
      });

      await page.getByRole('button', { name: 'Rotate secret of deploys' }).click();
      await shown.waitFor();
      const rotated = (await shown.textContent())!;
      expect(rotated)
        .to.match(/^whsec_/)
        .and.not.equal(secret);
      await page.getByRole('button', { name: 'I have kept it' }).click();

      await page.getByRole('button', { name: 'Delete deploys' }).click();
      await page.getByText('Deleted webhook deploys.').waitFor();
      expect((await c.call('GET', '/v1/sys/webhooks/deploys')).status).to.equal(404);
      expect(errors.filter((e) => e.startsWith(c.url))).to.deep.equal([]);
    } finally {
      await context.close();
      await receiver.close();
    }
  });

  it('an auditor reads and searches the audit log, sees an entry’s details, verifies it, and reads the seal report', async () => {
    {
      const context = await browser.newContext({ viewport: LAPTOP });
      const { page, errors } = await watchedPage(context);
      await signInWithToken(page, c.url, auditor);
      // An auditor gets the screens its privileges allow, and no others.
      expect(await page.getByRole('link', { name: 'Roles' }).count()).to.equal(0);
      await page.getByRole('link', { name: 'Audit log' }).click();
      await page.locator('table.audit tbody tr').first().waitFor();
      // Newest first: the first row's time is at least the last row's.
      const times = await page.locator('table.audit tbody tr td:first-child').allTextContents();
      expect(times.length).to.be.greaterThan(1);
      expect(Date.parse(times[0]!)).to.be.at.least(Date.parse(times.at(-1)!));
      // The navigation says which page this is (and only this one).
      expect(
        await page.getByRole('link', { name: 'Audit log' }).getAttribute('aria-current'),
      ).to.equal('page');
      expect(
        await page.getByRole('link', { name: 'Browse' }).getAttribute('aria-current'),
      ).to.equal(null);
      // A field for every filter the API takes, from the filters' one declaration.
      expect(await page.locator('form.filters input').count()).to.equal(AUDIT_FILTER_NAMES.length);
      await page.getByLabel(AUDIT_FILTERS.key.label).fill('payments/prod/key_7');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('cell', { name: 'payments/prod key_7 v1' }).first().waitFor();
      await page.getByRole('button', { name: 'Details' }).first().click();
      await page.getByText('"key": "key_7"').waitFor();
      await page.getByRole('button', { name: 'Verify the log' }).click();
      await page.getByText(/^Intact: \d+ entries/).waitFor();
      // The verdict says what it rests on, and what catches the rest.
      await page
        .getByText(/an older copy would verify too: coffer audit verify --against/)
        .waitFor();
      await check(page, 'audit');
      await page.getByRole('link', { name: 'Seal report' }).click();
      await page.getByText('30 secrets sealed; 0 anomalies').waitFor();
      // Its sentence reads as one: a space after each semicolon.
      expect(await page.getByRole('status').first().textContent()).to.match(
        /configs\); \d+ secrets sealed; 0 anomalies; 0 records failed/,
      );
      await check(page, 'seal-report');
      // The keyring screen: status and snapshots, but not the metrics (an auditor may not read them).
      await page.getByRole('link', { name: 'Keyring' }).click();
      await page.getByRole('cell', { name: snapshot }).waitFor();
      expect(await page.getByRole('heading', { name: 'Server' }).count()).to.equal(0);
      expect(errors.filter((e) => e.startsWith(c.url))).to.deep.equal([]);
      await context.close();
    }
  });
});

describe('the web console left unattended, in Chromium', function () {
  this.timeout(90_000);
  let c: TestCoffer;
  let browser: Browser;
  let writer: string;
  /** The server's clock runs this far ahead; each page's is moved alike (its context's clock). */
  let offset = 0;
  const key = (url: string) => `${url}/ui/#/key/db_password/in/team/app`;

  /** Moves both clocks: the server's, and the pages' (whose timers then run as time passes). */
  async function pass(context: BrowserContext, ms: number): Promise<void> {
    offset += ms;
    await context.clock.fastForward(ms);
  }

  before(async function () {
    requirePackage(this, 'chromium');
    c = await startTestCoffer({
      start: { now: () => Date.now() + offset },
      env: { COFFER_CONSOLE_IDLE_TIMEOUT: '60' },
    });
    writer = await c.token({ role: 'writer', expires_in: 86_400 });
    await c.put('team/app/db_password', SECRET, 'secret');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await c?.close();
  });

  it('drops a revealed value and signs out once unused for the idle timeout, saying why', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    await context.clock.install();
    const { page, errors } = await watchedPage(context);
    await signInWithToken(page, c.url, writer);
    await page.goto(key(c.url));
    await page.getByRole('button', { name: 'Reveal version 1' }).click();
    await page.getByText(SECRET).waitFor();

    await pass(context, 30_000);
    expect(await page.getByText(SECRET).count(), 'still shown within the idle timeout').to.equal(1);
    await pass(context, 33_000);
    await page
      .getByText('You were signed out after 1 minute without use. Sign in again.')
      .waitFor();
    expect(await page.content()).to.not.include(SECRET);
    expect(await page.getByLabel('Token').count()).to.equal(1);
    expect(errors).to.deep.equal([]);
    await context.close();
  });

  it('puts an unused tab away while another keeps the session, calling nothing until the person goes on; a sign-out in one tab ends the other', async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    await context.clock.install();
    const unused = await watchedPage(context);
    await signInWithToken(unused.page, c.url, writer);
    await unused.page.goto(key(c.url));
    await unused.page.getByRole('button', { name: 'Reveal version 1' }).click();
    await unused.page.getByText(SECRET).waitFor();
    const busy = await watchedPage(context);
    await busy.page.goto(`${c.url}/ui/`);
    await busy.page.getByRole('link', { name: 'team/' }).waitFor();

    await pass(context, 30_000);
    await busy.page.getByRole('link', { name: 'team/' }).click(); // a use: the session lives on
    await busy.page.getByRole('link', { name: 'app/' }).waitFor();
    const calls: string[] = [];
    unused.page.on('request', (request) => calls.push(request.url()));
    await pass(context, 33_000);
    await unused.page.getByRole('heading', { name: 'Put away' }).waitFor();
    expect(await unused.page.content()).to.not.include(SECRET);
    expect(await accessibilityViolations(unused.page)).to.deep.equal([]);
    // It asked whether the session lives (not a use), and then nothing more.
    await pass(context, 20_000);
    expect(calls.map((u) => new URL(u).pathname)).to.deep.equal(['/v1/console/session']);

    // The busy tab was used 53 s ago by the server's clock: the session lives, and going on shows the key afresh.
    await unused.page.getByRole('button', { name: 'Go on' }).click();
    await unused.page.getByRole('button', { name: 'Reveal version 1' }).waitFor();
    expect(await unused.page.content()).to.not.include(SECRET);

    await busy.page.getByRole('button', { name: 'Sign out' }).click();
    await busy.page.getByLabel('Token').waitFor();
    await unused.page.getByRole('button', { name: 'Reveal version 1' }).click();
    await unused.page.getByText('Your session has ended').waitFor();
    expect(await unused.page.getByLabel('Token').count()).to.equal(1);
    // The refused reveal's 401 is a failed resource load, which Chromium reports as a console error.
    expect(unused.errors.filter((e) => !e.includes('401'))).to.deep.equal([]);
    expect(busy.errors).to.deep.equal([]);
    await context.close();
  });
});
