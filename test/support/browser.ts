import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContextOptions, type CDPSession, chromium, type Page } from 'playwright-core';
import { startServiceAtIssuer } from './issuer.js';
import { PASSWORD } from './openid-flow.js';
import type { Service, ServiceOptions } from './service.js';

/** Debian's Chromium: the browser the page is tested in. */
export const CHROMIUM = '/usr/bin/chromium';

const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Installs Debian's chromium package when it is missing, so a fresh machine runs these tests too. */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  // Both browser test files may get here at once: the second apt-get waits for the first's lock
  // (then finds chromium installed) instead of failing on it.
  const apt = (...args: string[]) =>
    spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', ...args], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  let install = apt('install', '-y', 'chromium');
  if (install.status !== 0) {
    // A fresh machine may have no package lists yet.
    apt('update');
    install = apt('install', '-y', 'chromium');
  }
  if (install.status !== 0 || !existsSync(CHROMIUM)) {
    throw new Error(`apt-get install chromium failed:\n${install.stderr || install.error?.message}`);
  }
}

/** `npm run build` (a no-op when dist/ is newer than its sources): the page is served from dist/account. */
export function ensureBuilt(): void {
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stderr}`);
}

/** Chromium, headless; Playwright gives each launch a fresh profile (user-data-dir) and deletes it on close. */
export async function launchChromium(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
}

/** A page in a browser context of its own: desktop size, British English, UTC, unless `options` say otherwise. */
export async function newDesktopPage(browser: Browser, options: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: DESKTOP, locale: 'en-GB', timezoneId: 'UTC', ...options });
  return context.newPage();
}

/**
 * Chromium's virtual authenticator for `page` (CDP's WebAuthn domain), which verifies the person
 * and answers by itself. Without `discoverable` credentials it is a security key whose passkeys are
 * second factors: the username field's autofill (conditional mediation), which it would answer by
 * itself, offers none of them.
 */
export async function addVirtualAuthenticator(
  page: Page,
  discoverable: boolean,
): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: discoverable,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

/**
 * Keeps `page`'s script errors and console errors in `problems`. Chromium logs every 4xx a fetch
 * gets as a console error: those of the API under `refused.path` (a wrong code, a step-up) are
 * part of the flow and left out.
 */
export function recordProblems(page: Page, problems: string[], refused?: { origin: string; path: string }): void {
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const isRefusal =
      refused !== undefined &&
      /the server responded with a status of 4\d\d/.test(message.text()) &&
      new URL(message.location().url, refused.origin).pathname.startsWith(refused.path);
    if (!isRefusal) problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
}

/**
 * The service with ISSUER http://localhost:<port>, a secure context for WebAuthn whose RP ID is
 * `localhost`.
 */
export async function startServiceOnLocalhost(options: ServiceOptions = {}): ReturnType<typeof startServiceAtIssuer> {
  ensureBuilt();
  return startServiceAtIssuer(options, 'localhost');
}

export type ServiceOnLocalhost = Awaited<ReturnType<typeof startServiceOnLocalhost>>;

/**
 * What a browser test file starts first: the service on localhost (`startServiceOnLocalhost`) and
 * Chromium. Close them in that file's `after`, the browser first.
 */
export async function startServiceAndChromium(
  options: ServiceOptions = {},
): Promise<{ stack: ServiceOnLocalhost; service: Service; browser: Browser }> {
  const stack = await startServiceOnLocalhost(options);
  try {
    return { stack, service: stack.service, browser: await launchChromium() };
  } catch (error) {
    await stack.close();
    throw error;
  }
}

/**
 * Where the screenshots go: docs/screenshots/, which the README links to, when
 * UPDATE_SCREENSHOTS=1; otherwise a temporary folder. Every run takes them (a page that cannot be
 * drawn fails the test), but only an asked-for run changes the committed pictures, whose random
 * keys and times would otherwise differ after every `npm test`.
 */
export function screenshotDir(): string {
  const dir =
    process.env.UPDATE_SCREENSHOTS === '1'
      ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
      : join(tmpdir(), 'mfa-account-screenshots');
  mkdirSync(dir, { recursive: true });
  return dir;
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 375, height: 812 };
/** Screenshots that are never committed: states only a test can reach. */
export const SCRATCH_DIR = join(tmpdir(), 'mfa-account-screenshots');

/** Waits until `text` is announced (live region status or alert) and shown beside what it is about. */
export async function notice(page: Page, kind: 'status' | 'alert', text: string | RegExp): Promise<void> {
  await page.locator(`#${kind}`, { hasText: text }).waitFor({ state: 'attached' });
  await page
    .locator(kind === 'alert' ? '.notice.notice-error' : '.notice:not(.notice-error)', { hasText: text })
    .waitFor();
}

export function button(page: Page, name: string | RegExp) {
  return page.getByRole('button', { name, exact: typeof name === 'string' });
}

/** Desktop and phone screenshots into `dir`; at 375 px nothing may be wider than the screen. */
export async function screenshots(page: Page, name: string, dir = screenshotDir()): Promise<void> {
  await page.screenshot({ path: join(dir, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
  assert.ok(overflow <= 0, `${name}: the page is ${overflow} px wider than a 375 px screen`);
  await page.screenshot({ path: join(dir, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/** The account page's sign-in form: `username` and `password`, sent with Enter. */
export async function enterPassword(page: Page, username: string, password: string): Promise<void> {
  await page.locator('#username').fill(username);
  await page.locator('#password').fill(password);
  await page.keyboard.press('Enter');
}

/** The token endpoint's next answer, parsed. */
export async function nextTokenAnswer(page: Page): Promise<any> {
  const response = await page.waitForResponse((candidate) => candidate.url().endsWith('/mfa/oauth2/token/'));
  return response.json();
}

/**
 * At the hosted sign-in the page was sent to: the password, then the code of `code` (an
 * authenticator app) when one is given.
 */
export async function signInAtHostedPage(page: Page, username: string, code?: () => string): Promise<void> {
  // Exactly 'Username': the console's own search field ('Username or email') would match too, and
  // be typed into while a slow redirect to the hosted sign-in has not yet left the console.
  const usernameField = page.getByLabel('Username', { exact: true });
  await usernameField.waitFor();
  // The hosted sign-in of a sign-in that must be fresh (prompt=login) already names the person.
  if (await usernameField.isEditable()) await usernameField.fill(username);
  await page.getByRole('textbox', { name: 'Password', exact: true }).fill(PASSWORD);
  await button(page, 'Continue').click();
  if (!code) return;
  await page.getByLabel('Code from the app').fill(code());
  await button(page, 'Verify').click();
}
