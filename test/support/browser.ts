/**
 * Debian's Chromium driven by playwright-core, for the web console's tests: headless, a new empty profile
 * each launch, and none of Chromium's own connections to Google's services (this machine's network is
 * closed, and they would be refused many at a time). Pages record every console error and uncaught error.
 */
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM } from './system-packages.js';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export const LAPTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

/** A page whose console errors and uncaught errors are collected in `errors`, each after the page's address. */
export async function watchedPage(
  context: BrowserContext,
): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (err) => errors.push(`${page.url()}: ${err.message}`));
  return { page, errors };
}

/** Signs the console in with `token` through its own form, and waits for it to be signed in. */
export async function signInWithToken(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/ui/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in with the token' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
