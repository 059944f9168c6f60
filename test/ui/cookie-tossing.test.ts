import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { LAPTOP, launchChromium, signInWithToken, watchedPage } from '../support/browser.js';
import { startTestCoffer, type TestCoffer } from '../support/harness.js';
import { requirePackage } from '../support/system-packages.js';

/**
 * Over plain HTTP a page on another port of the same host shares the host's cookies: it can push the
 * victim's HttpOnly session cookie out of the jar with junk ones and plant its own session's cookie. The
 * console must then act as nobody — never as the planter's session.
 */
describe('the web console against cookie tossing from another port (Chromium, plain HTTP)', function () {
  this.timeout(90_000);
  let c: TestCoffer;
  let browser: Browser;
  let evil: Server;
  let planted: string;
  let attackerId: string;

  before(async function () {
    requirePackage(this, 'chromium');
    c = await startTestCoffer();
    // The attacker's own console session (its token's), whose cookie it will plant.
    const attacker = await c.token({ role: 'writer', metadata: { name: 'attacker' } });
    const signedIn = await c.call('POST', '/v1/console/sign-in', {
      token: null,
      json: { token: attacker },
    });
    expect(signedIn.status).to.equal(201);
    attackerId = signedIn.body.token_id;
    planted = /coffer_session=([^;]+)/.exec(signedIn.headers.getSetCookie()[0]!)![1]!;
    evil = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<script>
        for (let i = 0; i < 200; i++) document.cookie = 'junk' + i + '=x; path=/';
        document.cookie = 'coffer_session=${planted}; path=/';
        document.title = 'done';
      </script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    evil?.close();
    await c?.close();
  });

  it("a planted session cookie comes without this page's key: the console signs out instead of acting as the planter", async () => {
    const context = await browser.newContext({ viewport: LAPTOP });
    const { page } = await watchedPage(context);
    try {
      const victim = await c.token({ role: 'admin', metadata: { name: 'victim' } });
      await signInWithToken(page, c.url, victim);
      const seen: string[] = [];
      page.on('response', async (r) => {
        if (!r.url().endsWith('/v1/auth/me') || r.status() !== 200) return;
        seen.push(String((await r.json().catch(() => ({}))).token_id));
      });
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      await page.waitForFunction(() => document.title === 'done');
      // The planted cookie is what the browser now sends to Coffer.
      // (Past Chromium's 180 a host, the oldest go first: the console's own among them.)
      const sent = (await context.cookies(c.url)).filter((k) => k.name === 'coffer_session');
      expect(sent.map((k) => k.value)).to.include(planted);
      await page.goto(`${c.url}/ui/`);
      await page.getByRole('button', { name: 'Sign in with the token' }).waitFor();
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).to.equal(0);
      expect(seen).to.not.include(attackerId);
      // And the planted cookie is gone from the browser.
      const left = (await context.cookies(c.url)).filter((k) => k.name === 'coffer_session');
      expect(left.map((k) => k.value)).to.not.include(planted);
    } finally {
      await context.close();
    }
  });
});
