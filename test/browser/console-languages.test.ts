// The operators' console in the browser's language (CONTRACT §21, §22) in Debian's Chromium: a
// browser that asks for Spanish, then one that asks for German, sees the navigation, the headings,
// a table's columns, a plural, a confirmation and a refusal in that language, numbers and times as
// that language writes them; a language not shipped gets English. The operator signs in at the
// hosted sign-in in an English browser (the sign-in's own languages are tested with it): the
// browser's session is then handed to a browser in the language under test, whose console signs in
// through that session.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  button,
  newDesktopPage,
  notice,
  recordProblems,
  type ServiceOnLocalhost,
  screenshots,
  signInAtHostedPage,
  startServiceAndChromium,
} from '../support/browser.js';
import { addSmsSends, createOperatorAndUser, pauseCountry } from '../support/console.js';
import { createTotpUser } from '../support/openid-flow.js';
import type { Service } from '../support/service.js';

let stack: ServiceOnLocalhost;
let service: Service;
let browser: Browser;
const problems: string[] = [];
const contexts: BrowserContext[] = [];

before(async () => {
  ({ stack, service, browser } = await startServiceAndChromium());
});

after(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await stack?.close();
  assert.deepEqual(problems, []);
});

const consoleUrl = () => `${stack.origin}/admin/console/`;

/** A page in a browser of its own whose languages are `locale`; its script errors fail the test. */
async function pageIn(locale: string, storageState?: Awaited<ReturnType<BrowserContext['storageState']>>) {
  const page = await newDesktopPage(browser, { locale, storageState });
  contexts.push(page.context());
  // The admin API's refusals are not problems: the console answers them by signing in again or saying why.
  recordProblems(page, problems, { origin: stack.origin, path: '/admin/' });
  return page;
}

/**
 * The console in a browser whose language is `locale`, `username` signed in: at the hosted sign-in
 * of an English browser (until `signedIn`, an English heading, shows), whose session (its cookies)
 * the browser in `locale` then starts with.
 */
async function consoleIn(locale: string, username: string, signedIn: string, code?: () => string): Promise<Page> {
  const english = await pageIn('en-GB');
  await english.goto(consoleUrl());
  await signInAtHostedPage(english, username, code);
  await english.getByRole('heading', { name: signedIn, level: 1 }).waitFor();
  const page = await pageIn(locale, await english.context().storageState());
  await english.context().close();
  contexts.splice(contexts.indexOf(english.context()), 1);
  await page.goto(consoleUrl());
  return page;
}

/** The texts of the elements `selector` finds, trimmed. */
async function textsOf(page: Page, selector: string): Promise<string[]> {
  return (await page.locator(selector).allTextContents()).map((text) => text.trim());
}

describe('the operators’ console in the browser’s language (CONTRACT §22)', () => {
  let operator: Awaited<ReturnType<typeof createTotpUser>>;

  before(async () => {
    ({ operator } = await createOperatorAndUser(service));
  });

  /** The console in `locale`, olga signed in: the users' view, the page's language and the navigation as `expected`. */
  async function usersViewIn(locale: string, expected: { heading: string; lang: string; nav: string[] }) {
    const page = await consoleIn(locale, 'olga', 'Users', operator.code);
    await page.getByRole('heading', { name: expected.heading, level: 1 }).waitFor();
    assert.equal(await page.evaluate('document.documentElement.lang'), expected.lang);
    assert.deepEqual(await textsOf(page, '#nav a'), expected.nav);
    return page;
  }

  test('in Spanish: navigation, headings, a user’s factors and sessions, a confirmation by name, a table’s columns and plurals', async () => {
    const page = await usersViewIn('es-ES', {
      heading: 'Usuarios',
      lang: 'es',
      nav: ['Usuarios', 'SMS', 'Inicios de sesión', 'Clientes', 'Webhooks', 'Claves de firma'],
    });
    assert.equal(await page.title(), 'Usuarios · Consola de operadores');
    assert.equal(await page.getByRole('navigation', { name: 'Consola' }).isVisible(), true);
    assert.match((await page.locator('#who').textContent()) ?? '', /^Sesión iniciada como olga$/);
    assert.equal(await button(page, 'Cerrar sesión').isVisible(), true);

    await page.getByLabel('Nombre de usuario o correo').fill('tina');
    await button(page, 'Buscar').click();
    await button(page, /^tina/).click();
    await page.getByRole('heading', { name: 'tina', level: 2 }).waitFor();
    assert.deepEqual(await textsOf(page, '#user-detail h3'), [
      'Métodos de verificación',
      'Sesiones',
      'Dispositivos recordados',
      'Eventos recientes',
    ]);
    assert.match((await page.locator('#user-facts').textContent()) ?? '', /sin dirección de correo · MFA activada/);
    // The factor's name is the service's default one: data, not translated.
    assert.match(
      (await page.locator('#user-factors').textContent()) ?? '',
      /^Authenticator app · el predeterminado · /,
    );
    assert.match(
      (await page.locator('#user-sessions').textContent()) ?? '',
      /Password grant · inició sesión .+ con contraseña y aplicación de autenticación · última actividad /,
    );
    await screenshots(page, 'console-users-es');

    await button(page, 'Restablecer MFA').click();
    await page
      .getByText(
        '¿Restablecer la MFA de tina? Se eliminan todos los métodos de verificación y códigos de respaldo de tina',
      )
      .waitFor();
    await button(page, 'Sí, restablecer la MFA de tina').click();
    await notice(page, 'status', 'La MFA de tina está restablecida');
    await page.locator('#user-factors', { hasText: 'Ningún método de verificación' }).waitFor();
    assert.match((await page.locator('#user-sessions').textContent()) ?? '', /Ninguna sesión\./);
    // Event names are identifiers, the audit trail's and the webhooks': left as they are.
    await page.locator('#user-events', { hasText: 'mfa_disabled: reset_by_operator' }).waitFor();

    await addSmsSends(service, 'PT', 0, 1);
    await pauseCountry(service, 'PT');
    await page.getByRole('link', { name: 'SMS' }).click();
    await page.getByRole('heading', { name: 'SMS', level: 1 }).waitFor();
    await page.locator('#sms-chart canvas').waitFor();
    assert.deepEqual(await textsOf(page, '#sms-view thead th'), [
      'País',
      'Enviados / presupuesto',
      'Pausa por encima de',
      'Estado',
    ]);
    // One SMS: the singular ("enviado", not "enviados").
    assert.equal(
      await page.locator('#sms-summary').textContent(),
      '1 SMS de registro enviado en los últimos 7 días: PT 1.',
    );
    assert.match(await page.locator('#sms-chart .u-legend').innerText(), /Hora/);
    const portugal = page.locator('#sms-countries tr', { hasText: 'PT' });
    assert.match((await portugal.textContent()) ?? '', /En pausa hasta las \d\d:\d\d/);
    await portugal.getByRole('button', { name: 'Reanudar PT' }).click();
    await notice(page, 'status', 'Los SMS de registro a PT vuelven a enviarse durante el resto de esta hora.');

    await service.login('tina', 'a wrong password');
    await page.getByRole('link', { name: 'Inicios de sesión' }).click();
    await page.getByRole('heading', { name: 'Inicios de sesión', level: 1 }).waitFor();
    // One refusal takes the singular, no throttle the plural, as Spanish writes 0.
    assert.match(
      (await page.locator('#sign-ins-summary').textContent()) ?? '',
      /^En los últimos 7 días: \d+ correctos?, 1 rechazado, 0 limitados\.$/,
    );
    assert.deepEqual(await textsOf(page, '#sign-ins-chart .u-legend th'), [
      'Hora',
      'Correctos',
      'Rechazados',
      'Limitados',
    ]);
  });

  test('in German: the signing keys’ table, a rotation confirmed, numbers grouped as German does', async () => {
    const page = await usersViewIn('de-DE', {
      heading: 'Benutzer',
      lang: 'de',
      nav: ['Benutzer', 'SMS', 'Anmeldungen', 'Clients', 'Webhooks', 'Signaturschlüssel'],
    });

    await page.getByRole('link', { name: 'Signaturschlüssel' }).click();
    await page.getByRole('heading', { name: 'Signaturschlüssel', level: 1 }).waitFor();
    assert.equal(await page.title(), 'Signaturschlüssel · Betreiberkonsole');
    assert.deepEqual(await textsOf(page, '#signing-keys-view thead th'), [
      'Schlüssel-ID',
      'Algorithmus',
      'Status',
      'Erstellt',
    ]);
    const signing = page.locator('#key-list tr', { hasText: 'Signiert' });
    await signing.nth(2).waitFor();
    // A short date as German writes it: 27.11.26, 09:15.
    assert.match((await signing.first().locator('td').nth(3).textContent()) ?? '', /^\d\d\.\d\d\.\d\d, \d\d:\d\d$/);
    await button(page, 'Schlüssel erneuern').click();
    await page.getByText('Die Signaturschlüssel erneuern?').waitFor();
    await button(page, 'Ja, Schlüssel erneuern').click();
    await notice(page, 'status', /^Ab jetzt signieren neue Schlüssel/);
    assert.equal(await page.locator('#key-list tr', { hasText: 'Veröffentlicht' }).count(), 3);

    await addSmsSends(service, 'DE', 3, 12_344);
    await page.getByRole('link', { name: 'SMS' }).click();
    await page.locator('#sms-chart canvas').waitFor();
    assert.equal(
      await page.locator('#sms-summary').textContent(),
      '12.345 Registrierungs-SMS in den letzten 7 Tagen: DE 12.344, PT 1.',
    );
    assert.deepEqual(await textsOf(page, '#sms-view thead th'), ['Land', 'Gesendet / Budget', 'Pause ab', 'Status']);
    await screenshots(page, 'console-sms-de');

    await page.getByRole('link', { name: 'Clients' }).click();
    await page.locator('#client-list tr', { hasText: 'Operators’ console' }).getByText('eingebaut').waitFor();
    await button(page, 'Neuer Client').click();
    assert.equal(await page.getByRole('heading', { name: 'Neuer Client', level: 2 }).isVisible(), true);
    assert.equal(
      await page.getByLabel('Client-Authentifizierung').locator('option:checked').textContent(),
      'client_secret_basic: ein Secret, HTTP Basic',
    );
    await page.getByLabel('Name', { exact: true }).fill('Lohnbuchhaltung');
    await page.getByLabel('Redirect-URIs').fill('https://lohn.example.com/callback');
    await button(page, 'Client erstellen').click();
    await notice(page, 'status', 'Lohnbuchhaltung ist erstellt.');
    assert.match(await page.locator('#client-secret-for').innerText(), /^Das Secret von Lohnbuchhaltung \(/);
    await screenshots(page, 'console-clients-de');
  });

  test('a user who is not an operator is told why in their language (Spanish, French)', async () => {
    const nina = await createTotpUser(service, 'nina');
    const spanish = await consoleIn('es-ES', 'nina', 'You are not an operator', nina.code);
    await spanish.getByRole('heading', { name: 'No es operador', level: 1 }).waitFor();
    assert.match((await spanish.locator('#gate-text').textContent()) ?? '', /^Esta cuenta no puede usar la consola\./);
    assert.equal(await spanish.title(), 'No es operador · Consola de operadores');
    assert.equal(await spanish.locator('#nav').isHidden(), true);
    await screenshots(spanish, 'console-not-operator-es');

    const french = await consoleIn('fr-FR', 'nina', 'You are not an operator', nina.code);
    await french.getByRole('heading', { name: 'Vous n’êtes pas opérateur', level: 1 }).waitFor();
    assert.equal(await french.evaluate('document.documentElement.lang'), 'fr');
  });

  test('the console asks the hosted sign-in for its own language (ui_locales) when the browser names a shipped one', async () => {
    const page = await pageIn('pt-BR');
    const authorization = page.waitForRequest((request) => new URL(request.url()).searchParams.has('code_challenge'));
    await page.goto(consoleUrl());
    assert.equal(new URL((await authorization).url()).searchParams.get('ui_locales'), 'pt');
    await page.context().close();
    contexts.splice(contexts.indexOf(page.context()), 1);
    // A browser that names no shipped language asks for none: the operator's stored one then
    // comes before English.
    const japanese = await pageIn('ja-JP');
    const unnamed = japanese.waitForRequest((request) => new URL(request.url()).searchParams.has('code_challenge'));
    await japanese.goto(consoleUrl());
    assert.equal(new URL((await unnamed).url()).searchParams.has('ui_locales'), false);
    await japanese.context().close();
    contexts.splice(contexts.indexOf(japanese.context()), 1);
  });

  test('English is unchanged, and a browser in a language not shipped (Japanese) gets English', async () => {
    const page = await usersViewIn('ja-JP', {
      heading: 'Users',
      lang: 'en',
      nav: ['Users', 'SMS', 'Sign-ins', 'Clients', 'Webhooks', 'Signing keys'],
    });
    assert.equal(await page.title(), 'Users · Operators’ console');
    await page.getByRole('link', { name: 'SMS' }).click();
    await page.locator('#sms-summary', { hasText: 'enrolment SMS' }).waitFor();
    assert.equal(
      await page.locator('#sms-summary').textContent(),
      '12,345 enrolment SMS in the last 7 days: DE 12,344, PT 1.',
    );
  });
});
