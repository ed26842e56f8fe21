import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  DESKTOP,
  newDesktopPage,
  notice,
  PHONE,
  type ServiceOnLocalhost,
  screenshotDir,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { nextPhone, type Service, TestClock } from '../support/service.js';

// The account page in the languages of its users (CONTRACT §22, issue 32): a German browser sees it
// in German before and after signing in, a language stored for the account wins after sign-in,
// "As my browser" goes back; an English browser sees it as before. And issue 31's points: the
// service's name in the header, dates in the page's language, and on a phone each factor's
// actions behind one menu button, worked with the keyboard. One person, SMS codes as the second
// step, with backup codes; each test goes on from where the one before left the page.

const USERNAME = 'greta';
const PASSWORD = 'correct horse battery';
const SERVICE_NAME = 'Nordlicht Bank';
const DAY_MS = 86_400_000;

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let page: Page;
const phone = nextPhone();
const pageErrors: string[] = [];

before(async () => {
  // The factor is made three days ago, so that the page says when in words ("vor 3 Tagen").
  const clock = new TestClock(Date.now() - 3 * DAY_MS);
  ({ stack, service, browser } = await startServiceAndChromium({ clock, env: { SERVICE_NAME } }));
  const { token } = await service.createUserWithMfa(USERNAME, PASSWORD, phone);
  const created = await service.call('/mfa/recovery/', { method: 'POST', token });
  assert.equal(created.status, 200);
  clock.moveTo(Date.now());
  page = await newDesktopPage(browser, { locale: 'de-DE' });
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

after(async () => {
  await browser?.close();
  await stack?.close();
});

/** Signs in on `tab` with the password, then the code the fake Twilio received. */
async function signIn(tab: Page) {
  // Past the SMS resend cooldown of the sign-in before.
  service.clock.advance(31);
  const sentBefore = service.twilio.messages.length;
  await tab.locator('#username').fill(USERNAME);
  await tab.locator('#password').fill(PASSWORD);
  await tab.locator('#password').press('Enter');
  await tab.locator('#code').waitFor();
  while (service.twilio.messages.length === sentBefore) await new Promise((resolve) => setTimeout(resolve, 50));
  await tab.locator('#code').fill(service.twilio.lastCodeFor(`+${phone}`));
  await tab.locator('#code').press('Enter');
  await tab.locator('#account-title').waitFor();
}

/** The language stored for the account, as the API tells it to a new login (password, then an SMS code). */
async function storedLanguage(): Promise<string | null> {
  service.clock.advance(31);
  await service.login(USERNAME, PASSWORD);
  const token = await service.accessToken(USERNAME, PASSWORD, { mfa_code: service.twilio.lastCodeFor(`+${phone}`) });
  const response = await service.call('/mfa/language/', { token });
  assert.equal(response.status, 200);
  return ((await response.json()) as { language: string | null }).language;
}

function factorItem(name: string) {
  return page.locator('#factor-list > li', { has: page.locator('.factor-name', { hasText: name }) });
}

/** The accessible name of the focused element, as its text reads (visible and visually hidden). */
function focusedText(): Promise<string> {
  return page.evaluate<string>('document.activeElement?.textContent ?? ""');
}

describe('the account page in its users’ languages (CONTRACT §22)', () => {
  test('before sign-in a German browser sees German, under the service’s name', async () => {
    await page.goto(`${stack.origin}/account/`);
    await page.getByRole('heading', { name: 'Anmelden' }).waitFor();
    assert.equal(await page.locator('html').getAttribute('lang'), 'de');
    assert.equal(await page.title(), 'Anmelden · Kontosicherheit');
    assert.equal(await page.locator('.brand').textContent(), 'Kontosicherheit');
    await page.locator('#service-name', { hasText: SERVICE_NAME }).waitFor();
  });

  test('after sign-in: headings, buttons, a plural and dates in German', async () => {
    await signIn(page);
    await page.getByRole('heading', { name: 'Anmeldesicherheit' }).waitFor();
    assert.equal(await page.title(), 'Anmeldesicherheit · Kontosicherheit');
    await page.getByRole('heading', { name: 'Ihre Bestätigungsmethoden' }).waitFor();
    await page.getByRole('button', { name: 'Umbenennen „SMS“' }).waitFor();
    await page.getByRole('button', { name: 'Abmelden' }).waitFor();
    await page.getByText('Sie haben 10 unbenutzte Backup-Codes. Ein neuer Satz macht diese ungültig.').waitFor();
    await page.getByRole('button', { name: 'Neue Backup-Codes erstellen' }).waitFor();
    const dates = factorItem('SMS').locator('.factor-dates');
    assert.match((await dates.textContent()) ?? '', /^Hinzugefügt vor 3 Tagen · Zuletzt verwendet gerade eben$/);
    // The tooltip's date and time as German writes them: 24.11.2026, 07:12.
    assert.match(
      (await dates.locator('time').first().getAttribute('title')) ?? '',
      /^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/,
    );
    await screenshots(page, 'account-german');
  });

  test('an error of the account page’s own is said in German', async () => {
    // The factor went meanwhile (removed in another tab): the service answers 404.
    await page.route('**/mfa/factors/*/', (route) =>
      route.request().method() === 'PATCH'
        ? route.fulfill({
            status: 404,
            contentType: 'application/json',
            body: JSON.stringify({ error: 'not_found', error_description: 'no such factor' }),
          })
        : route.continue(),
    );
    await page.getByRole('button', { name: 'Umbenennen „SMS“' }).click();
    await page.getByLabel('Neuer Name für „SMS“').fill('Handy');
    await page.getByLabel('Neuer Name für „SMS“').press('Enter');
    await notice(page, 'alert', 'Diese Methode gibt es nicht mehr; die Liste ist jetzt aktuell.');
    // Said above the list, which was drawn again: not in the row that was replaced.
    await factorItem('SMS').locator('form').waitFor({ state: 'hidden' });
    const said = page.locator('.notice.notice-error', { hasText: 'Diese Methode gibt es nicht mehr' });
    assert.equal(await said.isVisible(), true);
    await page.unroute('**/mfa/factors/*/');
  });

  test('on a phone each factor’s actions open from one menu button, with the keyboard', async () => {
    await page.setViewportSize(PHONE);
    const menuButton = page.getByRole('button', { name: 'Verwalten „SMS“' });
    const rename = page.getByRole('button', { name: 'Umbenennen „SMS“' });
    await menuButton.waitFor();
    assert.equal(await rename.isHidden(), true, 'the actions wait behind the menu button');
    assert.equal(await menuButton.getAttribute('aria-expanded'), 'false');

    await menuButton.focus();
    await page.keyboard.press('Enter');
    await rename.waitFor();
    assert.equal(await menuButton.getAttribute('aria-expanded'), 'true');
    assert.equal(await focusedText(), 'Umbenennen „SMS“', 'the first action has the focus');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focusedText(), 'Entfernen „SMS“');
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than a 375 px screen`);
    await page.screenshot({ path: join(screenshotDir(), 'account-factor-menu-phone.png') });

    await page.keyboard.press('Escape');
    await rename.waitFor({ state: 'hidden' });
    assert.equal(await menuButton.getAttribute('aria-expanded'), 'false');
    assert.equal(await focusedText(), 'Verwalten „SMS“ ▾', 'the focus is back on the menu button');

    // Space opens it too; an action chosen closes it, and cancelling gives the focus back to it.
    await page.keyboard.press('Space');
    await rename.waitFor();
    await page.keyboard.press('Enter');
    await page.getByLabel('Neuer Name für „SMS“').waitFor();
    assert.equal(await rename.isHidden(), true);
    await page.keyboard.press('Escape');
    await page.getByLabel('Neuer Name für „SMS“').waitFor({ state: 'hidden' });
    assert.equal(await focusedText(), 'Verwalten „SMS“ ▾');

    await page.setViewportSize(DESKTOP);
    await rename.waitFor();
    assert.equal(await menuButton.isHidden(), true, 'wide enough: the buttons, no menu');
  });

  test('a stored language wins after sign-in, and “As my browser” goes back', async () => {
    const choice = page.getByLabel('Ihre Sprache');
    await choice.selectOption('pt');
    await page.locator('#language-form button[type="submit"]').click();
    await notice(page, 'status', 'Idioma salvo.');
    assert.equal(await page.locator('html').getAttribute('lang'), 'pt');
    await page.getByRole('heading', { name: 'Segurança do início de sessão' }).waitFor();
    await page.getByText('Você tem 10 códigos de reserva não usados. Um novo conjunto os anula.').waitFor();
    assert.equal(await page.title(), 'Segurança do início de sessão · Segurança da conta');
    assert.equal(await storedLanguage(), 'pt');

    // The tokens go with the tab: after a reload the sign-in is in the browser's German again.
    await page.reload();
    await page.getByRole('heading', { name: 'Anmelden' }).waitFor();
    await signIn(page);
    await page.getByRole('heading', { name: 'Segurança do início de sessão' }).waitFor();
    assert.equal(await page.locator('html').getAttribute('lang'), 'pt');
    assert.equal(await page.getByLabel('O seu idioma').inputValue(), 'pt');

    await page.getByLabel('O seu idioma').selectOption({ label: 'Como o meu navegador' });
    await page.locator('#language-form button[type="submit"]').click();
    await notice(page, 'status', 'Sprache gespeichert.');
    await page.getByRole('heading', { name: 'Anmeldesicherheit' }).waitFor();
    assert.equal(await page.locator('html').getAttribute('lang'), 'de');
    assert.equal(await storedLanguage(), null);
  });

  test('an English browser sees the page in English, as before', async () => {
    const tab = await newDesktopPage(browser);
    tab.on('pageerror', (error) => pageErrors.push(error.message));
    await tab.goto(`${stack.origin}/account/`);
    await tab.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await tab.locator('html').getAttribute('lang'), 'en');
    assert.equal(await tab.title(), 'Sign in · Account security');
    await signIn(tab);
    await tab.getByRole('heading', { name: 'Your ways to verify' }).waitFor();
    assert.equal(await tab.title(), 'Sign-in security · Account security');
    await tab.getByText('You have 10 unused backup codes. A new set cancels these.').waitFor();
    assert.match(
      (await tab.locator('#factor-list .factor-dates').first().textContent()) ?? '',
      /^Added 3 days ago · Last used (just now|\d+ minutes? ago)$/,
    );
    await tab.getByRole('button', { name: 'Rename “SMS”' }).waitFor();
    await tab.context().close();
  });

  test('no script error on the way', () => {
    assert.deepEqual(pageErrors, []);
  });
});
