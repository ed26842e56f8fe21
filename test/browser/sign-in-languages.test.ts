import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as client from 'openid-client';
import * as OTPAuth from 'otpauth';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  button,
  newDesktopPage,
  notice,
  SCRATCH_DIR,
  type ServiceOnLocalhost,
  screenshots,
  startServiceAndChromium,
} from '../support/browser.js';
import { type BrowserApp, startBrowserApp } from '../support/browser-app.js';
import { PASSWORD } from '../support/openid-flow.js';
import { expectStatus, nextPhone, type Service } from '../support/service.js';

// CONTRACT §22 in Chromium: the hosted sign-in (CONTRACT §18) and the password-reset page in the
// person's language: the one the service chose for the sign-in (the authorization request's
// ui_locales first), else the browser's. Titles, labels, the service's error sentences and plural
// forms are all translated; English stays as it was. Issue 31: an SMS cooldown at the second step
// is information, the "Send a new code" button counting the seconds down.

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
let acme: BrowserApp;
let config: client.Configuration;
/** An app that requires a second factor (mfa_policy required), with a long name. */
let payrollConfig: client.Configuration;
const pageErrors: string[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
  acme = await startBrowserApp(stack);
  config = await acme.register({ name: 'Acme web' });
  payrollConfig = await acme.register({ name: 'Lohnbuchhaltung', mfa_policy: 'required' });
});

after(async () => {
  await browser?.close();
  await stack?.close();
  await acme?.close();
});

/** A browser whose languages are `locale`'s (Accept-Language and navigator.languages). */
async function pageIn(locale: string): Promise<{ context: BrowserContext; page: Page }> {
  const page = await newDesktopPage(browser, { locale });
  page.on('pageerror', (error) => pageErrors.push(`${locale}: ${error.message}`));
  return { context: page.context(), page };
}

/** A user with SMS codes and a set of backup codes; answers the phone's digits and the codes. */
async function userWithSmsAndBackupCodes(username: string) {
  const phone = nextPhone();
  const { token } = await service.createUserWithMfa(username, PASSWORD, phone);
  const { backup_codes: codes } = await expectStatus(service.call('/mfa/recovery/', { method: 'POST', token }), 200);
  return { phone, backupCodes: codes as string[] };
}

/** The app sends `page` to sign in (openid-client builds the request); answers what lands back at the app. */
async function startAt(page: Page, extra: Record<string, string> = {}, app = config) {
  // The authorization endpoint hands the page its description in a cookie with the redirect to it.
  const description = page.waitForResponse((response) => new URL(response.url()).pathname === '/mfa/oauth2/authorize/');
  const signIn = await acme.sendToSignIn(page, app, { scope: 'openid', prompt: 'login', ...extra });
  return {
    /** The sign-in's description, as the page read it. */
    description: description.then(async (response) => {
      const cookie = (await response.headerValue('set-cookie'))
        ?.split('\n')
        .find((line) => line.startsWith('mfa-sign-in='));
      const value = decodeURIComponent(cookie?.slice('mfa-sign-in='.length).split(';')[0] ?? '');
      return JSON.parse(value.slice(value.indexOf('.') + 1)) as Record<string, unknown>;
    }),
    back: signIn.back,
  };
}

/** The sign-in form's words in a language. */
const GERMAN = { username: 'Benutzername', password: 'Passwort', go: 'Weiter' };
const FRENCH = { username: 'Nom d’utilisateur', password: 'Mot de passe', go: 'Continuer' };
const ENGLISH = { username: 'Username', password: 'Password', go: 'Continue' };

/** Types `password` (and `username`, when given: after a wrong password the form keeps the name) and sends the form. */
async function submitPassword(page: Page, words: typeof ENGLISH, password: string, username?: string) {
  if (username !== undefined) await page.getByLabel(words.username).fill(username);
  await page.getByRole('textbox', { name: words.password, exact: true }).fill(password);
  await button(page, words.go).click();
}

/** The service's next answer to "Send a new code" is a 429 sms_cooldown with Retry-After `seconds`. */
async function nextResendInCooldown(page: Page, seconds: number) {
  const pattern = '**/mfa/oauth2/sign-in/*/second-factor';
  await page.route(
    pattern,
    (route) =>
      route.fulfill({
        status: 429,
        headers: { 'retry-after': String(seconds) },
        contentType: 'application/json',
        body: JSON.stringify({
          error: 'sms_cooldown',
          error_description: `a code was sent moments ago; wait ${seconds} s before asking again`,
        }),
      }),
    { times: 1 },
  );
}

const lang = (page: Page) => page.evaluate<string>('document.documentElement.lang');

describe('the hosted sign-in and the reset page in the person’s language (CONTRACT §22)', () => {
  test('German (ui_locales=de): titles, labels, a wrong password, the SMS cooldown counting down, the backup codes left', async () => {
    const { phone, backupCodes } = await userWithSmsAndBackupCodes('greta');
    const { context, page } = await pageIn('de-DE');
    const signIn = await startAt(page, { ui_locales: 'de' });
    await page.getByText('Melden Sie sich an, um mit Acme web fortzufahren.').waitFor();
    assert.equal(await lang(page), 'de');
    assert.equal(await page.title(), 'Bei Acme web anmelden · MFA', 'the title names the app and the service');
    assert.equal(await page.locator('#service-name').textContent(), 'MFA');
    await page.getByRole('heading', { name: 'Anmelden', exact: true }).waitFor();
    await button(page, 'Passwort vergessen?').waitFor();
    await button(page, 'Mit einem Passkey anmelden').waitFor();
    await screenshots(page, 'hosted-sign-in-de');

    await submitPassword(page, GERMAN, 'wrong password', 'greta');
    await notice(page, 'alert', 'Benutzername oder Passwort ist falsch.');

    await submitPassword(page, GERMAN, PASSWORD);
    await page.getByRole('heading', { name: 'Zweiter Schritt: ein Code per SMS' }).waitFor();
    assert.equal(await page.locator('#factor-who').textContent(), 'Anmeldung als greta');
    await page.getByLabel('Code aus der SMS').waitFor();
    await page.getByRole('heading', { name: 'Andere Bestätigungsmethoden' }).waitFor();

    await nextResendInCooldown(page, 21);
    await button(page, 'Neuen Code senden').click();
    await notice(page, 'status', 'Der eben gesendete Code ist weiterhin gültig.');
    const waiting = button(page, /^Neuen Code senden \(\d+ s\)$/);
    assert.equal(await waiting.isDisabled(), true);
    assert.equal(await page.locator('.notice-error:not([hidden])').count(), 0, 'information, not an error');
    await screenshots(page, 'hosted-sms-cooldown-de');

    const sent = service.twilio.lastCodeFor(`+${phone}`);
    await page.getByLabel('Code aus der SMS').fill(sent === '000000' ? '111111' : '000000');
    await button(page, 'Bestätigen').click();
    await notice(page, 'alert', 'Dieser Code ist falsch, abgelaufen oder bereits verwendet.');

    await button(page, 'Einen Backup-Code verwenden').click();
    await page.getByLabel('Backup-Code (12 Ziffern)').fill(backupCodes[0] ?? '');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Sie haben sich mit einem Backup-Code angemeldet' }).waitFor();
    await page.getByText('9 Backup-Codes sind übrig.').waitFor();
    await button(page, 'Weiter zu Acme web').click();
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'backup']);
    await context.close();
  });

  test('German: an app that requires a second factor takes a person through adding an authenticator app, then the backup codes', async () => {
    await service.createUser('heinz', PASSWORD);
    const { context, page } = await pageIn('de-DE');
    const signIn = await startAt(page, { ui_locales: 'de' }, payrollConfig);
    await submitPassword(page, GERMAN, PASSWORD, 'heinz');
    await page.getByRole('heading', { name: 'Bestätigungsmethode hinzufügen' }).waitFor();
    await page.getByText('Lohnbuchhaltung verlangt die Anmeldung in zwei Schritten.').waitFor();
    assert.equal(await page.title(), 'Bestätigungsmethode hinzufügen · MFA');
    await button(page, 'Authenticator-App hinzufügen').click();
    assert.equal(await page.locator('#totp-name').inputValue(), 'Authenticator-App');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Scannen Sie den Code mit Ihrer App' }).waitFor();
    await page.locator('#totp-qr svg').waitFor();
    await page.getByRole('link', { name: 'Auf diesem Telefon? Schlüssel in Ihrer Authenticator-App öffnen' }).waitFor();
    await screenshots(page, 'hosted-add-factor-de');
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    const added = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    await page
      .getByLabel('Der 6-stellige Code, den die App anzeigt')
      .fill(added.generate({ timestamp: service.clock.now().getTime() }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Ihre neuen Backup-Codes' }).waitFor();
    await page
      .getByText('Authenticator-App hinzugefügt. Bei der Anmeldung können Sie jetzt die Codes der App verwenden.')
      .waitFor();
    await page.getByText(/^Für heinz bei localhost:\d+, erstellt am \d{4}-\d\d-\d\d\.$/).waitFor();
    await screenshots(page, 'hosted-backup-codes-de');
    await button(page, 'Gespeichert, weiter zu Lohnbuchhaltung').click();
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'otp']);
    await context.close();
  });

  test('French from the browser alone (fr-FR, no ui_locales): the steps, a wrong code, one backup code left', async () => {
    const { phone, backupCodes } = await userWithSmsAndBackupCodes('fleur');
    // Nine of the ten spent first, so that the page says one is left (the singular).
    for (const code of backupCodes.slice(1, 9)) {
      await expectStatus(service.login('fleur', PASSWORD, { backup_code: code }), 200);
    }
    const { context, page } = await pageIn('fr-FR');
    const signIn = await startAt(page);
    await page.getByText('Connectez-vous pour continuer vers Acme web.').waitFor();
    assert.equal(await lang(page), 'fr');
    assert.equal(await page.title(), 'Connexion à Acme web · MFA');
    await submitPassword(page, FRENCH, 'wrong password', 'fleur');
    await notice(page, 'alert', 'Le nom d’utilisateur ou le mot de passe est incorrect.');
    await submitPassword(page, FRENCH, PASSWORD);
    await page.getByRole('heading', { name: 'Deuxième étape\u00a0: un code par SMS' }).waitFor();
    // Not committed (a scratch folder): at 375 px nothing may be wider than the screen.
    await screenshots(page, 'hosted-second-step-fr', SCRATCH_DIR);
    await page.getByLabel('Code reçu par SMS').fill('12');
    await button(page, 'Vérifier').click();
    await notice(page, 'alert', 'Saisissez les 6 chiffres du code.');
    assert.ok(service.twilio.lastCodeFor(`+${phone}`), 'the SMS went out');

    await button(page, 'Utiliser un code de secours').click();
    await page.getByLabel('Code de secours (12 chiffres)').fill(backupCodes[0] ?? '');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Vous avez utilisé un code de secours pour vous connecter' }).waitFor();
    await page
      .getByText('Il reste 1 code de secours. Créez bientôt un nouveau jeu sur la page de votre compte.')
      .waitFor();
    await button(page, 'Continuer vers Acme web').click();
    await signIn.back();
    await context.close();
  });

  test('ui_locales wins over the browser’s languages: the service names the sign-in’s language', async () => {
    const { context, page } = await pageIn('fr-FR');
    const signIn = await startAt(page, { ui_locales: 'de' });
    const description = await signIn.description;
    assert.equal(description.language, 'de');
    await page.getByText('Melden Sie sich an, um mit Acme web fortzufahren.').waitFor();
    assert.equal(await lang(page), 'de');
    await context.close();
  });

  test('English is unchanged; the cooldown counts down to an enabled “Send a new code”', async () => {
    const { phone } = await userWithSmsAndBackupCodes('edgar');
    const { context, page } = await pageIn('en-GB');
    const signIn = await startAt(page);
    await page.getByText('Sign in to continue to Acme web.').waitFor();
    assert.equal(await lang(page), 'en');
    assert.equal(await page.title(), 'Sign in to Acme web · MFA');
    await submitPassword(page, ENGLISH, PASSWORD, 'edgar');
    await page.getByRole('heading', { name: 'Second step: a code by SMS' }).waitFor();
    assert.equal(await page.locator('#factor-who').textContent(), 'Signing in as edgar');

    await nextResendInCooldown(page, 3);
    await button(page, 'Send a new code').click();
    await notice(page, 'status', 'The code sent moments ago still works.');
    const first = button(page, /^Send a new code \(\d s\)$/);
    assert.equal(await first.isDisabled(), true);
    const before = await first.textContent();
    assert.match(before ?? '', /\((3|2) s\)/);
    await page.waitForTimeout(1100);
    assert.notEqual(await button(page, /^Send a new code/).textContent(), before, 'it counts down');
    const enabled = button(page, 'Send a new code');
    await enabled.waitFor({ timeout: 5000 });
    assert.equal(await enabled.isEnabled(), true, 'at 0 it can be pressed again');

    await page.getByLabel('Code from the SMS').fill(service.twilio.lastCodeFor(`+${phone}`));
    await button(page, 'Verify').click();
    const tokens = await signIn.back();
    assert.deepEqual(tokens.claims()?.amr, ['pwd', 'sms']);
    await context.close();
  });

  test('the password-reset page in Spanish (es-ES) and Portuguese (pt-PT), from the browser’s languages', async () => {
    let { context, page } = await pageIn('es-ES');
    await page.goto(`${stack.origin}/account/reset/?token=not-a-link-we-sent`);
    await page.getByRole('heading', { name: 'Elija una contraseña nueva' }).waitFor();
    assert.equal(await lang(page), 'es');
    assert.equal(await page.title(), 'Elija una contraseña nueva');
    await screenshots(page, 'reset-password-es');
    const input = page.getByLabel('Contraseña nueva', { exact: true });
    await input.fill('short');
    await button(page, 'Establecer la contraseña nueva').click();
    await notice(page, 'alert', 'Una contraseña necesita 8 caracteres o más.');
    await input.fill('violet tugboat lantern');
    await button(page, 'Establecer la contraseña nueva').click();
    await notice(page, 'alert', /^Este enlace ya no funciona/);
    await context.close();

    ({ context, page } = await pageIn('pt-PT'));
    await page.goto(`${stack.origin}/account/reset/`);
    await page.getByRole('heading', { name: 'Abra o link do seu e-mail' }).waitFor();
    assert.equal(await lang(page), 'pt');
    await page.getByRole('link', { name: 'Ir para o início de sessão' }).waitFor();
    await context.close();
  });

  test('no script error in any language', () => {
    assert.deepEqual(pageErrors, []);
  });
});
